package orchestrator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/workflow"
)

// TestBudgetPausesThenGoesOn: a model-calling step spends past the
// workflow's token budget; the next step waits for a decision, approve
// lets it run, and the complete event carries what was spent.
func TestBudgetPausesThenGoesOn(t *testing.T) {
	think := newFn("think", func(ctx context.Context, req agents.Request) (json.RawMessage, error) {
		llm.Meter(ctx, 120, 30) // as llm.Chat does for each call
		return json.RawMessage(`"thought"`), nil
	})
	s := startStack(t, think)
	p := plan(step("a", "think"), step("b", "echo", "a"))
	submit(t, s.env.Bus, "default", "spender", events.WorkflowSubmitted{Plan: p, Budget: &events.Budget{Tokens: 100}})
	var cp *workflow.Checkpoint
	waitFor(t, "held for the budget", func() bool {
		c, err := s.orch.Checkpoint(context.Background(), "default", "spender")
		cp = c
		return err == nil && c.BudgetHeld
	})
	if cp.Status != events.StateInputRequired || cp.Usage.Tokens() != 150 || cp.Tasks["b"].Status != events.StateSubmitted {
		t.Fatalf("held: status %s, usage %+v, b %s", cp.Status, cp.Usage, cp.Tasks["b"].Status)
	}
	res := control(t, s.env.Bus, "default", "spender", events.Control{Action: events.ActionApprove, Reason: "go on"})
	if !res.Applied {
		t.Fatalf("approve: %+v", res)
	}
	rs := collect(t, s.env.Bus, "default", "spender")
	end := last(t, rs)
	var c events.Complete
	if end.Type != events.TypeComplete || end.Unmarshal(&c) != nil || c.Usage == nil || c.Usage.Tokens() != 150 || c.Usage.Calls != 1 {
		t.Fatalf("ended %s with usage %+v", end.Type, c.Usage)
	}
	said := false
	for _, r := range rs {
		var st events.Status
		if r.Envelope.Type == events.TypeStatus && r.Envelope.Unmarshal(&st) == nil && strings.HasPrefix(st.Message, "budget: ") {
			said = true
		}
	}
	if !said {
		t.Error("no status event said the budget was spent")
	}
}

// TestBudgetFails: with on_exceed fail, the workflow fails with code
// budget_exceeded and its next step never runs.
func TestBudgetFails(t *testing.T) {
	think := newFn("think", func(ctx context.Context, req agents.Request) (json.RawMessage, error) {
		llm.Meter(ctx, 90, 20)
		return json.RawMessage(`"thought"`), nil
	})
	after := newFn("after", func(ctx context.Context, req agents.Request) (json.RawMessage, error) {
		return json.RawMessage(`1`), nil
	})
	s := startStack(t, think, after)
	p := plan(step("a", "think"), step("b", "after", "a"))
	submit(t, s.env.Bus, "default", "overspent", events.WorkflowSubmitted{Plan: p, Budget: &events.Budget{Tokens: 100, OnExceed: events.BudgetFail}})
	end := last(t, collect(t, s.env.Bus, "default", "overspent"))
	var e events.Error
	if end.Type != events.TypeError || end.Unmarshal(&e) != nil || e.Code != events.CodeBudgetExceeded {
		t.Fatalf("ended %s %+v", end.Type, e)
	}
	cp, err := s.orch.Checkpoint(context.Background(), "default", "overspent")
	if err != nil {
		t.Fatal(err)
	}
	if b := cp.Tasks["b"]; b.Attempt != 0 || after.calls.Load() != 0 {
		t.Errorf("the step after the budget was dispatched %d times and ran %d", b.Attempt, after.calls.Load())
	}
}
