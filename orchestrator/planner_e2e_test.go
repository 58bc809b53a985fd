package orchestrator_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
)

// stub stands in for a built-in agent of one capability: it returns its
// input and the ids of the steps it got outputs from.
type stub struct{ capability string }

type stubOutput struct {
	Capability string          `json:"capability"`
	Input      json.RawMessage `json:"input"`
	From       []string        `json:"from"`
}

func (s stub) Card() agents.Card {
	return agents.Card{Name: s.capability + "-stub", Version: "0.0.1", Capabilities: []string{s.capability},
		Description: "Test stand-in for the " + s.capability + " agent."}
}

func (s stub) Handle(_ context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
	from := make([]string, 0, len(req.DependencyOutputs))
	for id := range req.DependencyOutputs {
		from = append(from, id)
	}
	slices.Sort(from)
	return json.Marshal(stubOutput{Capability: s.capability, Input: req.Input, From: from})
}

// startPlanning runs an orchestrator with planner (nil: the default) and
// a worker with echo and the given agents.
func startPlanning(t *testing.T, planner orchestrator.Planner, extra ...agents.Agent) *bustest.Env {
	t.Helper()
	env := bustest.New(t)
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
	o, err := orchestrator.New(ctx, orchestrator.Config{Bus: env.Bus, Logger: log, Planner: planner})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
	return env
}

// planned returns the message of the workflow's "planned …" status event.
func planned(t *testing.T, rs []bus.Record) string {
	t.Helper()
	for _, r := range rs {
		if r.Envelope.Type != events.TypeStatus {
			continue
		}
		var st events.Status
		if err := json.Unmarshal(r.Envelope.Data, &st); err != nil {
			t.Fatal(err)
		}
		if st.StepID == "" && strings.HasPrefix(st.Message, "planned ") {
			return st.Message
		}
	}
	t.Fatalf("no planned status event: %s", describe(rs))
	return ""
}

func completed(t *testing.T, rs []bus.Record) events.Complete {
	t.Helper()
	end := last(t, rs)
	if end.Type != events.TypeComplete {
		t.Fatalf("workflow ended with %s: %s", end.Type, describe(rs))
	}
	var c events.Complete
	if err := json.Unmarshal(end.Data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLLMPlanRunsEndToEnd(t *testing.T) {
	m := newFakeModel(t, false, func(r chatRequest) (int, string) {
		if r.Messages[1].Content == "plan badly" {
			return 200, "I would rather not."
		}
		return 200, twoEchoSteps
	})
	env := startPlanning(t, &orchestrator.LLMPlanner{Chat: m.chat(t)})

	submit(t, env.Bus, "default", "llm-plan", events.WorkflowSubmitted{Query: "say hello twice"})
	rs := collect(t, env.Bus, "default", "llm-plan")
	c := completed(t, rs)
	if why := planned(t, rs); !strings.HasPrefix(why, "planned 2 steps in 2 stages; LLM planner (test-model at ") ||
		!strings.HasSuffix(why, "2 steps: A → B") {
		t.Fatalf("status %q does not say the plan came from the LLM", why)
	}
	var b echo.Output
	if err := json.Unmarshal(c.Result, &b); err != nil || b.StepID != "B" {
		t.Fatalf("result %s is not B's output (%v)", c.Result, err)
	}
	var a echo.Output
	if err := json.Unmarshal(b.DependencyOutputs["A"], &a); err != nil || !strings.Contains(string(a.Input), `"first"`) {
		t.Fatalf("B did not get A's output with the LLM's input: %s", b.DependencyOutputs["A"])
	}
	if !strings.Contains(string(b.Input), "say hello twice") {
		t.Fatalf("B's input %s should be the query", b.Input)
	}

	submit(t, env.Bus, "default", "llm-bad", events.WorkflowSubmitted{Query: "plan badly"})
	rs = collect(t, env.Bus, "default", "llm-bad")
	completed(t, rs)
	if why := planned(t, rs); !strings.Contains(why, "LLM planner failed (the answer is not JSON") ||
		!strings.Contains(why, "); heuristic planner: ") {
		t.Fatalf("status %q does not say the LLM failed and the heuristic planned", why)
	}
	if n := len(m.got()); n != 2 {
		t.Fatalf("the model was asked %d times, want 2", n)
	}
}

func TestHeuristicFlowsRunEndToEnd(t *testing.T) {
	var extra []agents.Agent
	for _, c := range seedCapabilities {
		extra = append(extra, stub{c})
	}
	env := startPlanning(t, nil, extra...)

	submit(t, env.Bus, "default", "simple", events.WorkflowSubmitted{Query: "what is jetstream"})
	rs := collect(t, env.Bus, "default", "simple")
	c := completed(t, rs)
	if why := planned(t, rs); !strings.HasSuffix(why, "3 stages; heuristic planner: simple query: entity_extraction → search → summarize") {
		t.Fatalf("status %q", why)
	}
	var sum stubOutput
	if err := json.Unmarshal(c.Result, &sum); err != nil || sum.Capability != "summarize" || !slices.Equal(sum.From, []string{"search"}) {
		t.Fatalf("result %s is not summarize's after search (%v)", c.Result, err)
	}

	submit(t, env.Bus, "default", "complex", events.WorkflowSubmitted{Query: "compare jetstream and kafka"})
	rs = collect(t, env.Bus, "default", "complex")
	c = completed(t, rs)
	if why := planned(t, rs); !strings.HasPrefix(why, "planned 5 steps in 3 stages; heuristic planner: complex") {
		t.Fatalf("status %q", why)
	}
	var search stubOutput
	if err := json.Unmarshal(c.Outputs["search"], &search); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(search.From, []string{"entity_extraction", "profile_selection", "query_enhancement"}) ||
		string(search.Input) != `{"query":"compare jetstream and kafka","ensemble":true}` {
		t.Fatalf("search ran with input %s after %v", search.Input, search.From)
	}
	var report stubOutput
	if err := json.Unmarshal(c.Result, &report); err != nil || report.Capability != "detailed_report" {
		t.Fatalf("result %s is not the detailed report (%v)", c.Result, err)
	}

	// A query naming a capability outside the flows goes to it alone.
	submit(t, env.Bus, "default", "named", events.WorkflowSubmitted{Query: "echo hello"})
	rs = collect(t, env.Bus, "default", "named")
	completed(t, rs)
	if why := planned(t, rs); !strings.HasSuffix(why, "; heuristic planner: routed to echo: the query names it") {
		t.Fatalf("status %q", why)
	}
}
