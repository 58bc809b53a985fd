package orchestrator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/permissions"
)

// TestToolPermissions: the orchestrator refuses a plan — explicit or
// planned — with a step its tenant and role may not run, naming the
// step's pointer and the rule in the error event, and nothing is
// dispatched; a requires_confirmation step waits, its input shown, until
// approved, and a rejection ends the workflow with the step unrun.
func TestToolPermissions(t *testing.T) {
	tool := newFn("tool_web_fetch", func(_ context.Context, req agents.Request) (json.RawMessage, error) { return req.Input, nil })
	table, err := permissions.Parse([]byte(`{"acme": {
		"client": {"deny": ["tool_files_*", "echo"], "requires_confirmation": ["tool_web_*"]},
		"admin": {"requires_confirmation": ["tool_web_*"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	deleter := newFn("tool_files_delete", func(context.Context, agents.Request) (json.RawMessage, error) {
		return json.RawMessage(`"deleted"`), nil
	})
	s := startWith(t, bustest.New(t), orchestrator.Config{Permissions: table}, tool, deleter)
	b := s.env.Bus

	refused := func(t *testing.T, wf string, pointer, rule string) {
		t.Helper()
		end := last(t, collect(t, b, "acme", wf))
		var e events.Error
		if end.Type != events.TypeError || json.Unmarshal(end.Data, &e) != nil || e.Code != events.CodePermissionDenied || e.Rule != rule ||
			(pointer != "" && e.Pointer != pointer) || !strings.Contains(e.Message, rule) {
			t.Fatalf("workflow %s ended %s %s, want permission_denied at %s by %s", wf, end.Type, end.Data, pointer, rule)
		}
	}
	t.Run("explicit plan", func(t *testing.T) {
		submit(t, b, "acme", "deny", events.WorkflowSubmitted{Role: "client",
			Plan: plan(step("ok", "tool_web_fetch"), step("rm", "tool_files_delete", "ok"))})
		refused(t, "deny", "/plan/steps/1/capability", `acme/client deny "tool_files_*"`)
		if n := deleter.calls.Load(); n != 0 {
			t.Errorf("the denied tool ran %d times", n)
		}
	})
	t.Run("planned", func(t *testing.T) {
		// The heuristic planner plans echo for a query no agent fits.
		submit(t, b, "acme", "planned", events.WorkflowSubmitted{Role: "client", Query: "zzyzx qwv"})
		refused(t, "planned", "", `acme/client deny "echo"`)
	})
	t.Run("another role", func(t *testing.T) {
		submit(t, b, "acme", "admin", events.WorkflowSubmitted{Role: "admin", Plan: plan(step("rm", "tool_files_delete"))})
		if end := last(t, collect(t, b, "acme", "admin")); end.Type != events.TypeComplete {
			t.Fatalf("admin's workflow ended %s %s", end.Type, end.Data)
		}
	})

	confirmPlan := plan(events.PlanStep{ID: "fetch", Capability: "tool_web_fetch", Input: json.RawMessage(`{"url":"https://example.org/x"}`)})
	held := func(t *testing.T, wf string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		err := b.Follow(ctx, "acme", wf, 0, func(_ context.Context, r bus.Record) error {
			var st events.Status
			if r.Envelope.Type != events.TypeStatus || json.Unmarshal(r.Envelope.Data, &st) != nil || st.Confirm == nil {
				return nil
			}
			if st.StepID != "fetch" || st.State != events.StateInputRequired || st.Confirm.Rule != `acme/client requires_confirmation "tool_web_*"` ||
				string(st.Confirm.Input) != `{"url":"https://example.org/x"}` || !strings.Contains(st.Message, "https://example.org/x") {
				t.Errorf("the confirmation asked: %+v", st)
			}
			return bus.ErrStop
		})
		if err != nil {
			t.Fatalf("no confirmation asked for %s: %v", wf, err)
		}
		if n := tool.calls.Load(); n != 0 {
			t.Fatalf("the tool ran %d times before it was confirmed", n)
		}
	}
	t.Run("confirm then run", func(t *testing.T) {
		submit(t, b, "acme", "confirm", events.WorkflowSubmitted{Role: "client", Plan: confirmPlan})
		held(t, "confirm")
		if res := control(t, b, "acme", "confirm", events.Control{Action: events.ActionApprove, StepID: "fetch", Reason: "fine"}); !res.Applied {
			t.Fatalf("approve: %+v", res)
		}
		rs := collect(t, b, "acme", "confirm")
		if end := last(t, rs); end.Type != events.TypeComplete || !strings.Contains(string(end.Data), "example.org/x") {
			t.Fatalf("confirmed workflow ended %s %s", end.Type, end.Data)
		}
		if n := tool.calls.Load(); n != 1 {
			t.Fatalf("the confirmed tool ran %d times", n)
		}
	})
	t.Run("reject", func(t *testing.T) {
		tool.calls.Store(0)
		submit(t, b, "acme", "noconfirm", events.WorkflowSubmitted{Role: "client", Plan: confirmPlan})
		held(t, "noconfirm")
		if res := control(t, b, "acme", "noconfirm", events.Control{Action: events.ActionReject, Reason: "not that"}); !res.Applied {
			t.Fatalf("reject: %+v", res)
		}
		end := last(t, collect(t, b, "acme", "noconfirm"))
		if end.Type != events.TypeError || !strings.Contains(string(end.Data), events.CodeRejected) || tool.calls.Load() != 0 {
			t.Fatalf("rejected workflow ended %s %s, tool ran %d", end.Type, end.Data, tool.calls.Load())
		}
	})
}
