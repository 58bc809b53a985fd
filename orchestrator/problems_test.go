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
// every completed step's output comes as an artifact event before its
// completed status.
func TestStepsHearOfFailedStepsAndOutputsComeAsArtifacts(t *testing.T) {
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
	artifacts := map[string]int{} // step → index of its artifact
	for i, r := range rs {
		env := r.Envelope
		switch env.Type {
		case events.TypeArtifact:
			var a events.Artifact
			if err := env.Unmarshal(&a); err != nil {
				t.Fatal(err)
			}
			if a.ArtifactID != workflow.StepArtifactID(a.StepID) || !a.LastChunk || env.StepID != a.StepID {
				t.Fatalf("step artifact %+v on step %q", a, env.StepID)
			}
			if a.StepID == "final" && string(a.Data) != `{"answer":"done"}` {
				t.Fatalf("final's artifact carries %s", a.Data)
			}
			artifacts[a.StepID] = i
		case events.TypeStatus:
			var st events.Status
			_ = env.Unmarshal(&st)
			if st.State != events.StateCompleted || st.StepID == "" {
				continue
			}
			if at, ok := artifacts[st.StepID]; !ok || at > i {
				t.Fatalf("step %s completed before its artifact:%s", st.StepID, describe(rs))
			}
		}
	}
	if _, ok := artifacts["plan"]; ok || len(artifacts) != 2 {
		t.Fatalf("artifacts of steps %v, want A and final only", artifacts)
	}
}
