package subjects_test

import (
	"strings"
	"testing"

	"github.com/agentbus/agentbus/subjects"
)

// The timer builders land where their stream's filters catch them, and
// nowhere else; their names are valid JetStream names.
func TestTimerSubjects(t *testing.T) {
	filters := []string{subjects.AllSubmissions, subjects.AllSteps, subjects.AllReplies, subjects.AllEvents,
		subjects.AllControl, subjects.AllDeadLetters, subjects.AllTimers, subjects.AllWatches}
	for _, tc := range []struct {
		name   string
		build  func(tenant, workflow string) (string, error)
		filter string
	}{
		{"Timer", subjects.Timer, subjects.AllTimers},
		{"Watch", subjects.Watch, subjects.AllWatches},
	} {
		s, err := tc.build("acme", "wf-1")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, f := range filters {
			if got := matches(f, s); got != (f == tc.filter) {
				t.Errorf("%s: filter %q matches %q: %v", tc.name, f, s, got)
			}
		}
		if _, err := tc.build("acme", "wf.1"); err == nil {
			t.Errorf("%s accepted a workflow id with a dot", tc.name)
		}
	}
	for _, n := range []string{subjects.StreamTimers, subjects.BucketLeases, subjects.ConsumerTimers, subjects.LeaseScan} {
		if n == "" || strings.ContainsAny(n, ".*> \t") {
			t.Errorf("name %q is not a valid JetStream name or key", n)
		}
	}
}
