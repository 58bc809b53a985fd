package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
)

// TestThreeOrchestratorsDispatchEveryStepOnce runs 50 concurrent workflows
// through three orchestrators on their own connections: every workflow
// completes and every step runs exactly once.
func TestThreeOrchestratorsDispatchEveryStepOnce(t *testing.T) {
	var mu sync.Mutex
	runs := map[string]int{}
	count := newFn("count", func(_ context.Context, req agents.Request) (json.RawMessage, error) {
		mu.Lock()
		runs[req.WorkflowID+"/"+req.StepID]++
		mu.Unlock()
		return json.Marshal(req.StepID)
	})
	s := startStack(t, count) // one orchestrator …
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for range 2 { // … and two more
		o, err := orchestrator.New(ctx, orchestrator.Config{Bus: bustest.Connect(t, s.env), Logger: bustest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = o.Run(ctx) }()
	}
	const n = 50
	p := plan(step("A", "count"), step("B", "count", "A"), step("C", "count", "A"), step("D", "count", "B", "C"))
	for i := range n {
		submit(t, s.env.Bus, "default", fmt.Sprintf("multi-%02d", i), events.WorkflowSubmitted{Plan: p})
	}
	for i := range n {
		wf := fmt.Sprintf("multi-%02d", i)
		if end := last(t, collect(t, s.env.Bus, "default", wf)); end.Type != events.TypeComplete {
			t.Fatalf("%s ended %s %s", wf, end.Type, end.Data)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 4*n {
		t.Fatalf("%d distinct steps ran, want %d", len(runs), 4*n)
	}
	for k, v := range runs {
		if v != 1 {
			t.Errorf("step %s ran %d times", k, v)
		}
	}
}
