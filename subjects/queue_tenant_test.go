package subjects_test

import (
	"testing"

	"github.com/agentbus/agentbus/subjects"
)

// TestTenantQueue: the filter matches every priority of the tenant's queue
// of the capability, and no other tenant's or capability's; bad tokens
// are refused naming the field.
func TestTenantQueue(t *testing.T) {
	for _, c := range []struct {
		name, tenant, capability, want, field string
	}{
		{name: "ok", tenant: "acme", capability: "summarize", want: "agentbus.acme.queue.summarize.*"},
		{name: "wildcard tenant", tenant: "*", capability: "summarize", field: "tenant"},
		{name: "dotted capability", tenant: "acme", capability: "sum.marize", field: "capability"},
		{name: "full wildcard capability", tenant: "acme", capability: ">", field: "capability"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := subjects.TenantQueue(c.tenant, c.capability)
			if c.field != "" {
				checkRefusal(t, "TenantQueue", err, got)
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("TenantQueue(%q, %q) = %q, %v; want %q", c.tenant, c.capability, got, err, c.want)
			}
		})
	}
	f, _ := subjects.TenantQueue("acme", "x1")
	for p := 1; p <= 5; p++ {
		s, _ := subjects.Queue("acme", "x1", p)
		if !matches(f, s) || !matches(subjects.AllQueued, s) {
			t.Errorf("%q or %q does not match %q", f, subjects.AllQueued, s)
		}
	}
	for _, other := range [][2]string{{"beta", "x1"}, {"acme", "x2"}} {
		s, _ := subjects.Queue(other[0], other[1], 3)
		if matches(f, s) {
			t.Errorf("%q matches another queue's %q", f, s)
		}
	}
}
