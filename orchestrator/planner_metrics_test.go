package orchestrator_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
)

// downModel is an LLM that never answers.
type downModel struct{}

func (downModel) CompleteJSON(context.Context, string, string) (string, error) {
	return "", errors.New("connection refused")
}

// TestPlannerFallbacksAreCounted plans two bare queries with an LLM
// planner whose model is down: both are planned by the heuristic fallback,
// and the counter says 2.
func TestPlannerFallbacksAreCounted(t *testing.T) {
	env := bustest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	reg := prometheus.NewRegistry()
	m, err := orchestrator.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{echo.Agent{}}, Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(ctx, orchestrator.Config{Bus: env.Bus, Logger: bustest.Logger(t), Metrics: m,
		Planner: &orchestrator.LLMPlanner{Chat: downModel{}}})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
	for _, wf := range []string{"bare-1", "bare-2"} {
		submit(t, env.Bus, "default", wf, events.WorkflowSubmitted{Query: "hello there"})
		if end := last(t, collect(t, env.Bus, "default", wf)); end.Type != events.TypeComplete {
			t.Fatalf("%s ended %s: %s", wf, end.Type, end.Data)
		}
	}
	if got := gathered(t, reg, "agentbus_orchestrator_planner_fallbacks_total"); got != 2 {
		t.Fatalf("planner fallbacks %v, want 2", got)
	}
}

// gathered is the value of an unlabelled counter or gauge in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s gathered", name)
	return 0
}
