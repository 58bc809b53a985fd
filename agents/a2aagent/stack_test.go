package a2aagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/a2aagent"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/subjects"
)

// deadline bounds every wait in these tests: generous for a busy 2-core
// machine under -race, yet a hang still fails.
const deadline = 30 * time.Second

// stack is a running agentbus (embedded JetStream, a worker serving a
// remote agent's skills, an orchestrator) for one test.
type stack struct {
	b      *bus.Bus
	remote *a2aagent.Remote
	reg    *discovery.Registry
}

// startStack connects the test agent a with prefix "ext_" and its token
// from the (fake) environment, and runs a worker and an orchestrator.
func startStack(t *testing.T, a *testAgent) *stack {
	t.Helper()
	env := bustest.New(t)
	log := bustest.Logger(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	ep, err := a2aagent.ParseEndpoint(a.srv.URL + ";prefix=ext_;header=Authorization:env:TEST_AGENT_TOKEN")
	if err != nil {
		t.Fatal(err)
	}
	r, err := a2aagent.New(ctx, a2aagent.Config{Endpoint: ep, Refresh: 100 * time.Millisecond, PollInterval: 20 * time.Millisecond,
		PollMax: 100 * time.Millisecond, Logger: log,
		Getenv: func(k string) string { return map[string]string{"TEST_AGENT_TOKEN": token}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: env.Bus, Agents: r.Agents(), Logger: log, Heartbeat: 300 * time.Millisecond,
		MaxDeliver: 2, RetryBase: 50 * time.Millisecond, RetryMax: 100 * time.Millisecond, ShutdownGrace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(ctx, orchestrator.Config{Bus: env.Bus, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
	reg, err := discovery.New(ctx, env.Bus, llm.LocalEmbedder{})
	if err != nil {
		t.Fatal(err)
	}
	return &stack{b: env.Bus, remote: r, reg: reg}
}

// submit publishes a workflow with an explicit plan, as the gateway would.
func (s *stack) submit(t *testing.T, workflow string, steps ...events.PlanStep) {
	t.Helper()
	subj, err := subjects.Submit("default")
	if err != nil {
		t.Fatal(err)
	}
	key := events.SubmitKey("default", workflow)
	env, err := events.New(events.TypeWorkflowSubmitted, key, events.SourceGateway, "default", workflow, "",
		events.WorkflowSubmitted{Query: "remote skills " + workflow, Plan: &events.Plan{Steps: steps}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.b.Publish(ctx, subj, env, key); err != nil {
		t.Fatal(err)
	}
}

// follow returns a workflow's client events up to its terminal one.
func (s *stack) follow(t *testing.T, workflow string) []bus.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var out []bus.Record
	err := s.b.Follow(ctx, "default", workflow, 0, func(_ context.Context, r bus.Record) error {
		out = append(out, r)
		if r.Envelope.Type.Terminal() {
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("follow %s: %v%s", workflow, err, describe(out))
	}
	return out
}

// cancel cancels a workflow on its control subject and checks it applied.
func (s *stack) cancel(t *testing.T, workflow string) {
	t.Helper()
	subj, err := subjects.Control("default", workflow)
	if err != nil {
		t.Fatal(err)
	}
	env, err := events.New(events.TypeControl, "ctl-"+workflow, "/test", "default", workflow, "", events.Control{Action: events.ActionCancel, Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	out, err := s.b.Request(ctx, subj, env)
	if err != nil {
		t.Fatal(err)
	}
	var res events.ControlResult
	if err := json.Unmarshal(out, &res); err != nil || !res.Applied {
		t.Fatalf("cancel %s: %s (%v)", workflow, out, err)
	}
}

// health is the registry's health of every instance serving capability.
func (s *stack) health(t *testing.T, capability string) []discovery.Instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	list, err := s.reg.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []discovery.Instance
	for _, in := range list {
		for _, c := range in.Capabilities {
			if c == capability {
				out = append(out, in)
			}
		}
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("waited %s for %s; last saw: %s", deadline, what, saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func describe(rs []bus.Record) string {
	var s strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&s, "\n  %s %s %s", r.Envelope.Type.Short(), r.Envelope.StepID, r.Envelope.Data)
	}
	return s.String()
}

func step(id, capability string, input any, deps ...string) events.PlanStep {
	in, _ := json.Marshal(input)
	return events.PlanStep{ID: id, Capability: capability, Input: in, DependsOn: deps}
}
