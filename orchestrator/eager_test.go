package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/subjects"
	engine "github.com/agentbus/agentbus/workflow"
)

// runsByStep is an agent of capability name that counts its runs by step
// and answers with fn's result.
type runsByStep struct {
	name string
	mu   sync.Mutex
	runs map[string]int
	fn   func(ctx context.Context, req agents.Request, run int) (json.RawMessage, error)
}

func newRunsByStep(name string, fn func(ctx context.Context, req agents.Request, run int) (json.RawMessage, error)) *runsByStep {
	return &runsByStep{name: name, runs: map[string]int{}, fn: fn}
}

func (a *runsByStep) Card() agents.Card {
	return agents.Card{Name: a.name, Version: "1.0.0", Capabilities: []string{a.name}, Description: "test agent " + a.name}
}

func (a *runsByStep) Handle(ctx context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
	a.mu.Lock()
	a.runs[req.StepID]++
	n := a.runs[req.StepID]
	a.mu.Unlock()
	return a.fn(ctx, req, n)
}

func (a *runsByStep) ran(step string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runs[step]
}

func ok(context.Context, agents.Request, int) (json.RawMessage, error) {
	return json.RawMessage(`{"ok":true}`), nil
}

// chainOf is a chain of n steps s0 → s1 → … of one capability.
func chainOf(capability string, n int) *events.Plan {
	p := &events.Plan{}
	for i := range n {
		s := events.PlanStep{ID: fmt.Sprintf("s%d", i), Capability: capability}
		if i > 0 {
			s.DependsOn = []string{fmt.Sprintf("s%d", i-1)}
		}
		p.Steps = append(p.Steps, s)
	}
	return p
}

// runWorker runs a worker of the agents with cfg (its Bus, Agents and
// Logger set here) until the test ends.
func runWorker(t testing.TB, env *bustest.Env, cfg agents.WorkerConfig, as ...agents.Agent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg.Bus, cfg.Agents, cfg.Logger = env.Bus, as, bustest.Logger(t)
	w, err := agents.NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// storedSteps is how many step requests AGENTBUS_STEPS has stored.
func storedSteps(t *testing.T, env *bustest.Env) uint64 {
	t.Helper()
	return lastSeq(t, env, subjects.StreamSteps)
}

// lastSeq is how many messages a stream has stored (its last sequence).
func lastSeq(t *testing.T, env *bustest.Env, stream string) uint64 {
	t.Helper()
	st, err := env.Bus.JetStream().Stream(t.Context(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// counter reads a worker counter of the registry for capability.
func counter(t *testing.T, reg *prometheus.Registry, name, capability string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "capability" && l.GetValue() == capability {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestEagerStepsRunWithoutAPull: in a chain of one capability, each step
// after the first goes back to the worker that answered the one before,
// with the verdict: only the first request is stored in AGENTBUS_STEPS,
// every step runs once, and the log is whole. With eager dispatch off
// (agents.WorkerConfig.NoEager) every request is stored and pulled.
func TestEagerStepsRunWithoutAPull(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		noEager bool
		stored  uint64
		eager   float64
	}{{"eager", false, 1, 9}, {"pulled", true, 10, 0}} {
		t.Run(c.name, func(t *testing.T) {
			env := bustest.New(t)
			reg := prometheus.NewRegistry()
			metrics, err := agents.NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			a := newRunsByStep("count", ok)
			runWorker(t, env, agents.WorkerConfig{Metrics: metrics, NoEager: c.noEager}, a)
			o, _ := startOrchestrator(t, env, orchestrator.Config{})
			submit(t, env.Bus, "default", "chain", events.WorkflowSubmitted{Plan: chainOf("count", 10)})
			completedOnce(t, o, "chain", collect(t, env.Bus, "default", "chain"), nil)
			for i := range 10 {
				if n := a.ran(fmt.Sprintf("s%d", i)); n != 1 {
					t.Errorf("step s%d ran %d times, want 1", i, n)
				}
			}
			if got := storedSteps(t, env); got != c.stored {
				t.Errorf("AGENTBUS_STEPS stored %d requests, want %d", got, c.stored)
			}
			if got := counter(t, reg, "agentbus_worker_eager_steps_total", "count"); got != c.eager {
				t.Errorf("agentbus_worker_eager_steps_total = %v, want %v", got, c.eager)
			}
		})
	}
}

// TestHandedStepNeverRunIsDispatchedAgain: a worker hands A's answer over
// with an offer, gets B back with the verdict, and vanishes without running
// it. Nothing stores B's request. Either the watchdog finds B lost when its
// lease is due ("lease"), or — when A's answer comes again through the
// replies stream, which a worker that got no verdict sends — at once, with
// an hour's lease ("answer streamed"): a stream copy of an answer already
// recorded means its worker never got the step handed with it. A worker
// started later runs B's second attempt; the workflow completes once.
func TestHandedStepNeverRunIsDispatchedAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		lease    time.Duration
		streamed bool
	}{{"lease", testLease, false}, {"answer streamed", time.Hour, true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := bustest.New(t)
			served(t, env, "echo")
			o, _ := startOrchestrator(t, env, orchestrator.Config{StepLease: c.lease})
			const wf = "vanish"
			submit(t, env.Bus, "default", wf, events.WorkflowSubmitted{Plan: plan(step("A", "echo"), step("B", "echo", "A"))})
			handA(t, env, wf, bus.Offer{Capability: "echo"}, func(answer events.Envelope) {
				if c.streamed {
					replies, _ := subjects.Reply("default", wf)
					if _, err := env.Bus.Publish(t.Context(), replies, answer, answer.ID); err != nil {
						t.Fatal(err)
					}
				}
			})
			if c.streamed {
				checkpointWhen(t, o, wf, "B dispatched again", func(cp *engine.Checkpoint) bool { return cp.Tasks["B"].Attempt == 2 })
			} else if n := storedSteps(t, env); n != 1 {
				t.Fatalf("AGENTBUS_STEPS stored %d requests, want only A's: B was handed back", n)
			}
			startEcho(t, env)
			rs := collect(t, env.Bus, "default", wf)
			completedOnce(t, o, wf, rs, map[string]int{"B": 2})
			lost := false
			for _, st := range statuses(rs, "B") {
				lost = lost || st.Recovery == events.RecoveryLost
			}
			if !lost {
				t.Errorf("B's second attempt is not a recovery of a lost step:%s", describe(rs))
			}
		})
	}
}

// TestHandedStepOutlivingItsLeaseRunsOnce: a step handed back with the
// verdict runs for two leases. Its worker renews the lease while it runs
// (events.TypeStepRunning), so the watchdog leaves it be: it runs once.
// Without the renewals it would be found lost and run again.
func TestHandedStepOutlivingItsLeaseRunsOnce(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	a := newRunsByStep("slow", func(ctx context.Context, req agents.Request, _ int) (json.RawMessage, error) {
		if req.StepID == "B" {
			select {
			case <-time.After(4 * testLease):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return json.RawMessage(`{"ok":true}`), nil
	})
	// B's lease is its worker's AckWait (its offer says so), renewed every
	// third of it; two leases' run is six renewals.
	runWorker(t, env, agents.WorkerConfig{AckWait: 2 * testLease}, a)
	o, _ := startOrchestrator(t, env, orchestrator.Config{StepLease: 2 * testLease})
	const wf = "long"
	submit(t, env.Bus, "default", wf, events.WorkflowSubmitted{Plan: plan(step("A", "slow"), step("B", "slow", "A"))})
	completedOnce(t, o, wf, collect(t, env.Bus, "default", wf), nil)
	if n := a.ran("B"); n != 1 {
		t.Errorf("B ran %d times, want 1", n)
	}
	if n := storedSteps(t, env); n != 1 {
		t.Errorf("AGENTBUS_STEPS stored %d requests, want only A's: B was handed back", n)
	}
	cp, err := o.Checkpoint(t.Context(), "default", wf)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Tasks["B"].RenewedAt == nil {
		t.Errorf("B's lease was never renewed")
	}
	if got, want := cp.Tasks["B"].HandedLeaseMS, (2 * testLease).Milliseconds(); got != want {
		t.Errorf("B's lease is %d ms, want its worker's AckWait, %d ms", got, want)
	}
}

// TestHandedStepThatFailsGoesThroughTheStream: a step handed back with the
// verdict fails on its first run; the worker publishes its request on the
// step subject, and its retry is pulled from AGENTBUS_STEPS as any step's
// is. The workflow completes with B on its first attempt, run twice.
func TestHandedStepThatFailsGoesThroughTheStream(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	a := newRunsByStep("flaky", func(_ context.Context, req agents.Request, run int) (json.RawMessage, error) {
		if req.StepID == "B" && run == 1 {
			return nil, errors.New("transient")
		}
		return json.RawMessage(`{"ok":true}`), nil
	})
	runWorker(t, env, agents.WorkerConfig{RetryBase: 10 * time.Millisecond}, a)
	o, _ := startOrchestrator(t, env, orchestrator.Config{})
	const wf = "flaky"
	submit(t, env.Bus, "default", wf, events.WorkflowSubmitted{Plan: plan(step("A", "flaky"), step("B", "flaky", "A"))})
	completedOnce(t, o, wf, collect(t, env.Bus, "default", wf), nil)
	if n := a.ran("B"); n != 2 {
		t.Errorf("B ran %d times, want 2 (a failure, then its retry)", n)
	}
	if n := storedSteps(t, env); n != 2 {
		t.Errorf("AGENTBUS_STEPS stored %d requests, want 2: A's, and B's once its handed run failed", n)
	}
}

// TestHandedStepThatFailsForGoodIsDeadLettered: a step handed back with
// the verdict fails for good (agents.ErrPermanent) on its only run: it is
// dead-lettered from its envelope, as a pulled one is from its message,
// and the workflow fails — it does not run again.
func TestHandedStepThatFailsForGoodIsDeadLettered(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	a := newRunsByStep("doomed", func(_ context.Context, req agents.Request, _ int) (json.RawMessage, error) {
		if req.StepID == "B" {
			return nil, fmt.Errorf("%w: never", agents.ErrPermanent)
		}
		return json.RawMessage(`{"ok":true}`), nil
	})
	runWorker(t, env, agents.WorkerConfig{}, a)
	startOrchestrator(t, env, orchestrator.Config{})
	const wf = "doomed"
	submit(t, env.Bus, "default", wf, events.WorkflowSubmitted{Plan: plan(step("A", "doomed"), step("B", "doomed", "A"))})
	rs := collect(t, env.Bus, "default", wf)
	if end := last(t, rs); end.Type != events.TypeError {
		t.Fatalf("ended %s, want error:%s", end.Type.Short(), describe(rs))
	}
	if n := a.ran("B"); n != 1 {
		t.Errorf("B ran %d times, want 1", n)
	}
	if n := storedSteps(t, env); n != 1 {
		t.Errorf("AGENTBUS_STEPS stored %d requests, want only A's", n)
	}
	st, err := env.Bus.JetStream().Stream(t.Context(), subjects.StreamDeadLetter)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(t.Context(), "agentbus.default.deadletter.doomed")
	if err != nil {
		t.Fatalf("no dead letter for B: %v", err)
	}
	if got := m.Header[events.HeaderID]; len(got) != 1 || got[0] != events.StepKey("default", wf, "B", 1) {
		t.Errorf("the dead letter is %q, want B's request", got)
	}
}
