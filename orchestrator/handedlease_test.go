package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/subjects"
	engine "github.com/agentbus/agentbus/workflow"
)

// handA is a worker of echo that pulls workflow wf's step A, hands A's
// answer over with offer, and gets B's request back with the verdict,
// which it returns. beforeAck, if not nil, runs with A's answer before A's
// request is acked. Nothing runs B: the caller plays its worker, or lets
// it vanish.
func handA(t *testing.T, env *bustest.Env, wf string, offer bus.Offer, beforeAck func(answer events.Envelope)) events.Envelope {
	t.Helper()
	durable, _ := subjects.StepConsumer("echo")
	cons, err := env.Bus.JetStream().Consumer(t.Context(), subjects.StreamSteps, durable)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var back *events.Envelope
	for m := range batch.Messages() {
		req, err := events.Decode(m.Headers(), m.Data())
		if err != nil || req.StepID != "A" {
			t.Fatalf("pulled %+v, %v: want A's request", req, err)
		}
		answer, err := events.New(events.TypeStepCompleted, events.StepKey("default", wf, "A", 1), events.SourceAgentPrefix+"echo", "default", wf, "A",
			events.StepCompleted{StepID: "A", Capability: "echo", Attempt: 1, Output: json.RawMessage(`"a"`), Worker: "gone"})
		if err != nil {
			t.Fatal(err)
		}
		results, _ := subjects.Result("default", wf)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		back, err = env.Bus.HandOffer(ctx, results, answer, offer)
		cancel()
		if err != nil || back == nil || back.StepID != "B" || back.Type != events.TypeStepRequested {
			t.Fatalf("HandOffer = %+v, %v: want B's request back", back, err)
		}
		if beforeAck != nil {
			beforeAck(answer)
		}
		if err := m.Ack(); err != nil {
			t.Fatal(err)
		}
	}
	if back == nil {
		t.Fatal("pulled no request, want A's")
	}
	return *back
}

// TestHandedStepHasItsWorkersLease: a worker hands A's answer over with
// an offer naming its lease (its AckWait: bus.Offer.Lease), gets B back
// and vanishes. B is dispatched again once its worker's lease and the
// watchdog's first look (a third of StepLease) have passed — as soon,
// near enough, as JetStream would deliver a pulled step again — not a
// whole StepLease after, as when a handed step had StepLease.
func TestHandedStepHasItsWorkersLease(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	served(t, env, "echo")
	const stepLease = 9 * testLease
	o, _ := startOrchestrator(t, env, orchestrator.Config{StepLease: stepLease})
	const wf = "vanish-leased"
	submit(t, env.Bus, "default", wf, events.WorkflowSubmitted{Plan: plan(step("A", "echo"), step("B", "echo", "A"))})
	handA(t, env, wf, bus.Offer{Capability: "echo", Lease: testLease}, nil)
	handed := time.Now()
	cp := checkpointWhen(t, o, wf, "B dispatched again", func(cp *engine.Checkpoint) bool { return cp.Tasks["B"].Attempt == 2 })
	if took := time.Since(handed); took >= 2*stepLease/3 {
		t.Errorf("B dispatched again %s after its worker took it, want well within its StepLease (%s): its worker's lease is %s", took.Round(time.Millisecond), stepLease, testLease)
	}
	if got := cp.Tasks["B"].HandedLeaseMS; got != 0 {
		t.Errorf("B's second attempt keeps the first's handed lease (%d ms)", got)
	}
	startEcho(t, env)
	completedOnce(t, o, wf, collect(t, env.Bus, "default", wf), map[string]int{"B": 2})
}

// TestHandedStepLeaseRunsFromTheOrchestratorsStart: B is handed to a
// worker; the orchestrator goes away for longer than B's lease, so the
// worker's renewals find no one. A new orchestrator does not take B for
// lost at once — it gives the worker a lease from its own start to be
// heard again — and B, renewed and answered by that worker, runs once.
func TestHandedStepLeaseRunsFromTheOrchestratorsStart(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	served(t, env, "echo")
	const lease = 3 * testLease
	cfg := orchestrator.Config{StepLease: 2 * lease}
	o1, stop := startOrchestrator(t, env, cfg)
	const wf = "orchestrators-away"
	submit(t, env.Bus, "default", wf, events.WorkflowSubmitted{Plan: plan(step("A", "echo"), step("B", "echo", "A"))})
	b := handA(t, env, wf, bus.Offer{Capability: "echo", Lease: lease}, nil)
	// Its transition's events stored and its outbox cleared: a new
	// orchestrator would otherwise publish that outbox first and look at
	// the steps a lease later.
	checkpointWhen(t, o1, wf, "outbox cleared", func(cp *engine.Checkpoint) bool { return len(cp.Outbox) == 0 })
	stop()
	time.Sleep(lease + testLease/2) // every renewal in this span found no orchestrator

	// The watchdog's timer came due while no orchestrator ran: the new one
	// looks at B as it starts (its next schedule replaces the one that
	// came due), and must leave it with its worker.
	due := watchSchedule(t, env, wf)
	o, _ := startOrchestrator(t, env, cfg)
	waitFor(t, "the watchdog's next look scheduled", func() bool {
		s := watchSchedule(t, env, wf)
		return s != "" && s != due
	})
	if cp, err := o.Checkpoint(t.Context(), "default", wf); err != nil || cp.Tasks["B"].Attempt != 1 {
		t.Fatalf("B's attempt is %d (%v) once a new orchestrator looked at it, want 1: its worker had no time to be heard", cp.Tasks["B"].Attempt, err)
	}
	results, _ := subjects.Result("default", wf)
	hand := func(typ events.Type, id string, data any) {
		t.Helper()
		env2, err := events.New(typ, id, events.SourceAgentPrefix+"echo", "default", wf, "B", data)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		for {
			err := env.Bus.Hand(ctx, results, env2)
			if err == nil {
				return
			}
			if !errors.Is(err, bus.ErrNoResponder) || ctx.Err() != nil {
				t.Fatalf("hand %s: %v", typ, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	key := events.StepKey("default", wf, "B", 1)
	hand(events.TypeStepRunning, key+"/running/1", events.StepRunning{StepID: "B", Capability: "echo", Attempt: 1, Worker: "back"})
	hand(events.TypeStepCompleted, key, events.StepCompleted{StepID: "B", Capability: "echo", Attempt: 1, Output: json.RawMessage(`"b"`), Worker: "back"})
	if b.StepID != "B" {
		t.Fatalf("handed %s, want B", b.StepID)
	}
	completedOnce(t, o, wf, collect(t, env.Bus, "default", wf), nil)
}

// watchSchedule is the schedule of workflow wf's watchdog timer as stored
// (its Nats-Schedule header); "" if none is.
func watchSchedule(t *testing.T, env *bustest.Env, wf string) string {
	t.Helper()
	subj, _ := subjects.Watch("default", wf)
	st, err := env.Bus.JetStream().Stream(t.Context(), subjects.StreamTimers)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(t.Context(), subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return m.Header.Get("Nats-Schedule")
}
