package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// A step after an optional step that failed hears which one and why, and
// every completed step's output comes with its completed status, as its
// artifact; no step's output is an artifact event of its own.
func TestStepsHearOfFailedStepsAndOutputsComeWithTheirStatus(t *testing.T) {
	broken := newFn("broken", func(context.Context, agents.Request) (json.RawMessage, error) {
		return nil, fmt.Errorf("%w: no model today", agents.ErrPermanent)
	})
	var mu sync.Mutex
	var heard []events.StepProblem
	answer := newFn("answer", func(_ context.Context, req agents.Request) (json.RawMessage, error) {
		mu.Lock()
		heard = req.Problems
		mu.Unlock()
		return json.RawMessage(`{"answer":"done"}`), nil
	})
	s := startStack(t, broken, answer)
	submit(t, s.env.Bus, "default", "degraded", events.WorkflowSubmitted{Plan: plan(
		step("A", "echo"),
		events.PlanStep{ID: "plan", Capability: "broken", Optional: true},
		step("final", "answer", "A", "plan"),
	)})
	rs := collect(t, s.env.Bus, "default", "degraded")
	if end := last(t, rs); end.Type != events.TypeComplete {
		t.Fatalf("ended %s %s", end.Type, end.Data)
	}
	mu.Lock()
	got := heard
	mu.Unlock()
	if len(got) != 1 || got[0].StepID != "plan" || got[0].Capability != "broken" || got[0].Kind != events.ProblemFailed ||
		got[0].Error == "" {
		t.Fatalf("final heard of %+v, want the failed plan step", got)
	}
	artifacts := map[string]bool{} // steps whose completed status carried their output
	for _, r := range rs {
		env := r.Envelope
		switch env.Type {
		case events.TypeArtifact:
			t.Fatalf("a step's output as an artifact event of its own:%s", describe(rs))
		case events.TypeStatus:
			var st events.Status
			if err := env.Unmarshal(&st); err != nil {
				t.Fatal(err)
			}
			if st.StepID == "" || st.State != events.StateCompleted {
				if st.Artifact != nil {
					t.Fatalf("a %s status carries an artifact:%s", st.State, describe(rs))
				}
				continue
			}
			a := st.Artifact
			if a == nil {
				t.Fatalf("step %s completed without its output:%s", st.StepID, describe(rs))
			}
			if a.ArtifactID != workflow.StepArtifactID(st.StepID) || !a.LastChunk || a.StepID != "" {
				t.Fatalf("step artifact %+v on step %q", a, st.StepID)
			}
			if st.StepID == "final" && string(a.Data) != `{"answer":"done"}` {
				t.Fatalf("final's artifact carries %s", a.Data)
			}
			artifacts[st.StepID] = true
		}
	}
	if _, ok := artifacts["plan"]; ok || len(artifacts) != 2 {
		t.Fatalf("artifacts of steps %v, want A and final only", artifacts)
	}
}
