package orchestrator_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/subjects"
)

// stack is a server with an orchestrator and an echo worker running.
type stack struct {
	env  *bustest.Env
	orch *orchestrator.Orchestrator
}

func startStack(t testing.TB, extra ...agents.Agent) *stack {
	t.Helper()
	env := bustest.New(t)
	return startOn(t, env, extra...)
}

func startOn(t testing.TB, env *bustest.Env, extra ...agents.Agent) *stack {
	t.Helper()
	return startWith(t, env, orchestrator.Config{}, extra...)
}

// startWith is startOn with an orchestrator configuration (its Bus and
// Logger are set here).
func startWith(t testing.TB, env *bustest.Env, cfg orchestrator.Config, extra ...agents.Agent) *stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	log := bustest.Logger(t)
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: env.Bus, Agents: append([]agents.Agent{echo.Agent{}}, extra...), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cfg.Bus, cfg.Logger = env.Bus, log
	o, err := orchestrator.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
	return &stack{env: env, orch: o}
}

func submit(t testing.TB, b *bus.Bus, tenant, workflow string, sub events.WorkflowSubmitted) {
	t.Helper()
	subj, err := subjects.Submit(tenant)
	if err != nil {
		t.Fatal(err)
	}
	env, err := events.New(events.TypeWorkflowSubmitted, events.SubmitKey(tenant, workflow), events.SourceGateway, tenant, workflow, "", sub)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.Publish(ctx, subj, env, events.SubmitKey(tenant, workflow)); err != nil {
		t.Fatal(err)
	}
}

// collect follows a workflow's events until its terminal event, or fails the
// test at the deadline.
func collect(t testing.TB, b *bus.Bus, tenant, workflow string) []bus.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []bus.Record
	err := b.Follow(ctx, tenant, workflow, 0, func(_ context.Context, r bus.Record) error {
		out = append(out, r)
		if r.Envelope.Type.Terminal() {
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("follow %s: %v (got %d events: %s)", workflow, err, len(out), describe(out))
	}
	return out
}

func describe(rs []bus.Record) string {
	s := ""
	for _, r := range rs {
		s += "\n  " + r.Envelope.Type.Short() + " " + r.Envelope.StepID + " " + string(r.Envelope.Data)
	}
	return s
}

func plan(steps ...events.PlanStep) *events.Plan { return &events.Plan{Steps: steps} }

func step(id, capability string, deps ...string) events.PlanStep {
	in, _ := json.Marshal(map[string]string{"from": id})
	return events.PlanStep{ID: id, Capability: capability, Input: in, DependsOn: deps}
}

func last(t testing.TB, rs []bus.Record) events.Envelope {
	t.Helper()
	if len(rs) == 0 {
		t.Fatal("no events")
	}
	return rs[len(rs)-1].Envelope
}
