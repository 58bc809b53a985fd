package bus_test

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

// TestStoredStepsAndOldestQueued: StoredSteps counts every tenant's
// requests on every step subject in one look-up, and OldestQueued gives
// the time the first still-queued step of a tenant's queue was stored,
// whatever its priority, leaving out a queue with nothing in it.
func TestStoredStepsAndOldestQueued(t *testing.T) {
	env := bustest.New(t)
	ctx := testCtx(t)
	if err := env.Bus.EnsureQueue(ctx); err != nil {
		t.Fatal(err)
	}
	js := env.Bus.JetStream()
	publish := func(subj string) time.Time {
		t.Helper()
		ack, err := js.Publish(ctx, subj, []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		s, _ := js.Stream(ctx, ack.Stream)
		m, err := s.GetMsg(ctx, ack.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		return m.Time
	}
	for _, s := range []struct {
		tenant, capability string
		n                  int
	}{{"acme", "sleep", 3}, {"acme", "echo", 1}, {"beta", "sleep", 2}} {
		subj, _ := subjects.Step(s.tenant, s.capability)
		for range s.n {
			publish(subj)
		}
	}
	got, err := env.Bus.StoredSteps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b bus.StepCount) int {
		return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Capability, b.Capability))
	})
	want := []bus.StepCount{{"acme", "echo", 1}, {"acme", "sleep", 3}, {"beta", "sleep", 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("StoredSteps = %+v, want %+v", got, want)
	}

	q5, _ := subjects.Queue("acme", "sleep", 5)
	q1, _ := subjects.Queue("acme", "sleep", 1)
	qb, _ := subjects.Queue("beta", "sleep", 3)
	first := publish(q5) // the oldest, though at another priority than the next
	publish(q1)
	publish(qb)
	f, err := env.Bus.ReadFlow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Queued) != 3 || len(f.Stored) != 3 {
		t.Errorf("ReadFlow = %+v, want 3 queues of 1 step and the 3 step subjects", f)
	}
	oldest, err := env.Bus.OldestQueued(ctx, "acme", []string{"sleep", "echo"})
	if err != nil {
		t.Fatal(err)
	}
	if len(oldest) != 1 || !oldest["sleep"].Equal(first) {
		t.Fatalf("OldestQueued = %v, want only sleep at %v", oldest, first)
	}
	if _, err := env.Bus.OldestQueued(ctx, "acme.x", []string{"sleep"}); !errors.Is(err, subjects.ErrInvalidToken) {
		t.Errorf("bad tenant: err %v, want ErrInvalidToken", err)
	}
}

// TestFlowWithoutQueue: before an orchestrator made the queue, nothing
// waits in it, and the steps on the step subjects are still counted.
func TestFlowWithoutQueue(t *testing.T) {
	env := bustest.New(t)
	ctx := testCtx(t)
	subj, _ := subjects.Step("acme", "sleep")
	if _, err := env.Bus.JetStream().Publish(ctx, subj, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	oldest, err := env.Bus.OldestQueued(ctx, "acme", []string{"sleep"})
	if err != nil || len(oldest) != 0 {
		t.Fatalf("OldestQueued = %v, %v; want none", oldest, err)
	}
	f, err := env.Bus.ReadFlow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Queued) != 0 || !slices.Equal(f.Stored, []bus.StepCount{{"acme", "sleep", 1}}) {
		t.Fatalf("ReadFlow = %+v, want 1 stored step of acme's sleep and none queued", f)
	}
}
