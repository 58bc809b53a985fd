package workflow_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// TestApplyConfirm: a step a tool permission makes wait for a
// confirmation is held before its first dispatch, its status event
// showing the rule and the input; approving dispatches it (once: a
// resume does not ask again), rejecting ends the workflow with it unrun.
func TestApplyConfirm(t *testing.T) {
	start := func(t *testing.T) (*workflow.Checkpoint, workflow.Effects) {
		cp := workflow.New(workflow.Start{TenantID: "acme", WorkflowID: "confirm", Role: "client"}, t0)
		eff, err := workflow.Apply(cp, workflow.Planned{Plan: confirms(), Confirm: map[string]string{"A": confirmRule}}, t0, policy)
		if err != nil {
			t.Fatal(err)
		}
		return cp, eff
	}
	t.Run("held with its input", func(t *testing.T) {
		cp, eff := start(t)
		if got := summary(cp, eff, nil); got != "input-required [status status status timer step:C status]" {
			t.Fatalf("planned: %s", got)
		}
		a := cp.Tasks["A"]
		if a.Status != events.StateInputRequired || a.Approval == nil || !a.Approval.BeforeDispatch || a.Attempt != 0 || cp.Phase != workflow.PhaseAwaiting {
			t.Fatalf("A %+v %+v, phase %s", a, a.Approval, cp.Phase)
		}
		var st events.Status
		if err := json.Unmarshal(eff.Outbox[2].Data, &st); err != nil {
			t.Fatal(err)
		}
		if st.StepID != "A" || st.Confirm == nil || st.Confirm.Rule != confirmRule || st.Confirm.Capability != "tool_web_fetch" ||
			string(st.Confirm.Input) != `{"url":"https://example.org"}` {
			t.Fatalf("the held step's status %+v", st)
		}
		if got := cp.Awaiting(); len(got) != 1 || got[0] != "A" {
			t.Fatalf("awaiting %v", got)
		}
	})
	t.Run("approve dispatches with the role", func(t *testing.T) {
		cp, _ := start(t)
		eff, err := workflow.Apply(cp, workflow.Approve{StepID: "A", Comment: "ok"}, t0.Add(time.Second), policy)
		if got := summary(cp, eff, err); got != "working [status step:A status]" {
			t.Fatalf("approved: %s", got)
		}
		var req events.StepRequested
		_ = json.Unmarshal(eff.Outbox[1].Data, &req)
		if req.Role != "client" || string(req.Input) != `{"url":"https://example.org"}` {
			t.Errorf("request %+v", req)
		}
		// A fails, the workflow is resumed: A runs again without asking.
		drive(t, cp, workflow.Failed{StepFailed: events.StepFailed{StepID: "A", Attempt: 1, Error: "boom"}})
		eff, err = workflow.Apply(cp, workflow.Resume{}, t0.Add(time.Hour), policy)
		if got := summary(cp, eff, err); got != "working [timer status step:A status step:C status]" {
			t.Fatalf("resumed: %s", got)
		}
	})
	t.Run("reject", func(t *testing.T) {
		cp, _ := start(t)
		eff, err := workflow.Apply(cp, workflow.Reject{StepID: "A", Comment: "not that site"}, t0.Add(time.Second), policy)
		if got := summary(cp, eff, err); got != "rejected [status error] stop" || cp.Tasks["A"].Attempt != 0 || cp.Error.Code != events.CodeRejected {
			t.Fatalf("rejected: %s, A %+v", got, cp.Tasks["A"])
		}
	})
	t.Run("after a dependency", func(t *testing.T) {
		cp := workflow.New(workflow.Start{TenantID: "acme", WorkflowID: "dep"}, t0)
		drive(t, cp, workflow.Planned{Plan: chain(), Confirm: map[string]string{"B": confirmRule}})
		eff, err := workflow.Apply(cp, done("A", `"a"`), t0.Add(time.Minute), policy)
		if got := summary(cp, eff, err); got != "input-required [status+artifact status]" {
			t.Fatalf("A done: %s", got)
		}
	})
	t.Run("a refusal names its rule", func(t *testing.T) {
		cp := workflow.New(workflow.Start{TenantID: "acme", WorkflowID: "denied"}, t0)
		eff, err := workflow.Apply(cp, workflow.Planned{Plan: chain(), Refused: &workflow.PlanError{Code: events.CodePermissionDenied, StepID: "A",
			Pointer: "/plan/steps/0/capability", Message: "denied", Rule: `acme/client deny "echo"`}}, t0, policy)
		if got := summary(cp, eff, err); got != "failed [status status error]" {
			t.Fatalf("refused: %s", got)
		}
		var e events.Error
		_ = json.Unmarshal(eff.Outbox[len(eff.Outbox)-1].Data, &e)
		if e.Rule != `acme/client deny "echo"` || e.Pointer != "/plan/steps/0/capability" || e.Code != events.CodePermissionDenied {
			t.Errorf("error event %+v", e)
		}
	})
}
