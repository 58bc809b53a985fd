package bus_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// publishOther publishes a status event of another tenant's workflow.
func publishOther(t *testing.T, b *bus.Bus, other, workflow string) uint64 {
	t.Helper()
	env, err := events.New(events.TypeStatus, events.EventKey(other, workflow, 1), events.SourceOrchestrator,
		other, workflow, "", events.Status{State: events.StateWorking})
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := subjects.Events(other, workflow)
	p, err := b.Publish(testCtx(t), subj, env, env.ID)
	if err != nil {
		t.Fatal(err)
	}
	return p.Sequence
}

// collectTenant runs FollowTenant until it has seen want records.
func collectTenant(t *testing.T, b *bus.Bus, after uint64, want int) []bus.Record {
	t.Helper()
	var got []bus.Record
	err := b.FollowTenant(testCtx(t), tenant, after, func(_ context.Context, r bus.Record) error {
		got = append(got, r)
		if len(got) == want {
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("FollowTenant(after=%d) = %v, want nil after ErrStop", after, err)
	}
	return got
}

func TestFollowTenantSeesEveryWorkflowOfItsTenantOnly(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	w1, w2 := twoWorkflows(t, env.Bus)
	publishOther(t, env.Bus, "globex", "w1")
	last := publishEvent(t, env.Bus, "w3", 1)
	want := append(append(append([]uint64{}, w1...), w2...), last)

	recs := collectTenant(t, env.Bus, 0, len(want))
	seen := map[uint64]bool{}
	for i, r := range recs {
		if r.Envelope.TenantID != tenant {
			t.Errorf("record %d at %d is tenant %q's", i, r.Offset, r.Envelope.TenantID)
		}
		if i > 0 && r.Offset <= recs[i-1].Offset {
			t.Errorf("offsets not strictly increasing: %d after %d", r.Offset, recs[i-1].Offset)
		}
		seen[r.Offset] = true
	}
	for _, o := range want {
		if !seen[o] {
			t.Errorf("offset %d not delivered", o)
		}
	}
	if r := recs[len(recs)-1]; r.Offset != last || r.Pending != 0 {
		t.Errorf("last record = offset %d pending %d, want %d pending 0", r.Offset, r.Pending, last)
	}

	// Resuming after any record gives exactly the rest.
	mid := recs[4].Offset
	rest := collectTenant(t, env.Bus, mid, len(recs)-5)
	for i, r := range rest {
		if r.Offset != recs[5+i].Offset {
			t.Fatalf("resume after %d: record %d at %d, want %d", mid, i, r.Offset, recs[5+i].Offset)
		}
	}
}

func TestFollowTenantFollowsLiveEvents(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	_, last, err := env.Bus.EventsRange(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan bus.Record, 4)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	go func() {
		done <- env.Bus.FollowTenant(ctx, tenant, last, func(_ context.Context, r bus.Record) error {
			got <- r
			return nil
		})
	}()
	publishOther(t, env.Bus, "globex", "x")
	off := publishEvent(t, env.Bus, "live", 1)
	select {
	case r := <-got:
		if r.Offset != off || r.Envelope.WorkflowID != "live" {
			t.Fatalf("got %s at %d, want live at %d", r.Envelope.WorkflowID, r.Offset, off)
		}
	case <-ctx.Done():
		t.Fatal("no live event before the deadline")
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("FollowTenant after cancel = %v", err)
	}
}

func TestFollowTenantRefusesABadTenant(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	err := env.Bus.FollowTenant(testCtx(t), "a.b", 0, func(context.Context, bus.Record) error { return nil })
	if !errors.Is(err, subjects.ErrInvalidToken) {
		t.Errorf("FollowTenant(%q) = %v, want ErrInvalidToken", "a.b", err)
	}
}

func TestEventsRange(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	first, last, err := env.Bus.EventsRange(testCtx(t))
	if err != nil || first != last+1 {
		t.Fatalf("empty stream range = %d..%d, %v; want first = last+1", first, last, err)
	}
	a := publishEvent(t, env.Bus, "w1", 1)
	b := publishEvent(t, env.Bus, "w1", 2)
	if first, last, err = env.Bus.EventsRange(testCtx(t)); err != nil || first != a || last != b {
		t.Errorf("range = %d..%d, %v; want %d..%d", first, last, err, a, b)
	}
}

func TestTenantLastOffset(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	if off, err := env.Bus.TenantLastOffset(testCtx(t), tenant); err != nil || off != 0 {
		t.Fatalf("TenantLastOffset with no events = %d, %v; want 0", off, err)
	}
	publishEvent(t, env.Bus, "w1", 1)
	want := publishEvent(t, env.Bus, "w2", 1)
	publishOther(t, env.Bus, "globex", "w3")
	if off, err := env.Bus.TenantLastOffset(testCtx(t), tenant); err != nil || off != want {
		t.Errorf("TenantLastOffset = %d, %v; want %d (another tenant's later event does not count)", off, err, want)
	}
	if _, err := env.Bus.TenantLastOffset(testCtx(t), "a*"); !errors.Is(err, subjects.ErrInvalidToken) {
		t.Errorf("TenantLastOffset(%q) = %v, want ErrInvalidToken", "a*", err)
	}
}
