package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// testTimeout bounds every wait in this package's tests; a healthy run
// finishes each wait in milliseconds.
const testTimeout = 20 * time.Second

const tenant = "acme"

// testCtx returns a context that ends at the test's end or after testTimeout.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it reports true or testTimeout passes; what
// describes the last observed state for the failure message.
func eventually(t testing.TB, cond func() (ok bool, what string)) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, what := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", testTimeout, what)
		}
		<-tick.C
	}
}

// recv waits for one value on ch with a deadline.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatalf("no %s within %s", what, testTimeout)
		var zero T
		return zero
	}
}

// statusEvent builds workflow's n-th client event (a status whose message is
// its index, so order can be checked after replay).
func statusEvent(t testing.TB, workflow string, n int) events.Envelope {
	t.Helper()
	env, err := events.New(events.TypeStatus, events.EventKey(tenant, workflow, n), events.SourceOrchestrator,
		tenant, workflow, "", events.Status{State: events.StateWorking, Message: fmt.Sprint(n)})
	if err != nil {
		t.Fatalf("events.New: %v", err)
	}
	return env
}

// publishEvent publishes workflow's n-th client event to its events subject
// and returns the offset it was stored at.
func publishEvent(t testing.TB, b *bus.Bus, workflow string, n int) uint64 {
	t.Helper()
	subj, err := subjects.Events(tenant, workflow)
	if err != nil {
		t.Fatalf("subjects.Events: %v", err)
	}
	env := statusEvent(t, workflow, n)
	p, err := b.Publish(testCtx(t), subj, env, env.ID)
	if err != nil {
		t.Fatalf("publish %s: %v", env.ID, err)
	}
	if p.Stream != subjects.StreamEvents || p.Duplicate {
		t.Fatalf("publish %s: got %+v, want a new message in %s", env.ID, p, subjects.StreamEvents)
	}
	return p.Sequence
}

// publishStep publishes step request n for capability (of workflow
// "wf-<capability>") to the steps stream and returns its msgID.
func publishStep(t testing.TB, b *bus.Bus, capability string, n int) string {
	t.Helper()
	subj, err := subjects.Step(tenant, capability)
	if err != nil {
		t.Fatalf("subjects.Step: %v", err)
	}
	wf, step := "wf-"+capability, fmt.Sprintf("s%d", n)
	id := events.StepKey(tenant, wf, step, 1)
	env, err := events.New(events.TypeStepRequested, id, events.SourceOrchestrator, tenant, wf, step,
		events.StepRequested{StepID: step, Capability: capability, Attempt: 1})
	if err != nil {
		t.Fatalf("events.New: %v", err)
	}
	if _, err := b.Publish(testCtx(t), subj, env, id); err != nil {
		t.Fatalf("publish %s: %v", id, err)
	}
	return id
}

// streamMsgs returns how many messages a stream holds now.
func streamMsgs(t testing.TB, env *bustest.Env, stream string) uint64 {
	t.Helper()
	s, err := env.Bus.JetStream().Stream(testCtx(t), stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info, err := s.Info(testCtx(t))
	if err != nil {
		t.Fatalf("stream %s info: %v", stream, err)
	}
	return info.State.Msgs
}
