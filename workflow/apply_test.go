package workflow_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// transitions is the engine's table: every state, every kind of input, and
// what follows — the status reached and the outbox in order, or the
// refusal. A row changes only with the engine's behaviour, on purpose.
var transitions = []struct {
	state string
	kind  workflow.Kind
	want  string
}{
	{"planning", workflow.KindPlanned, "working [status status timer step:A status]"},
	{"planning", workflow.KindForked, "working [status status timer step:B status]"},
	{"planning", workflow.KindMalformed, "failed [status error]"},
	{"planning", workflow.KindCompleted, "illegal"},
	{"planning", workflow.KindFailed, "illegal"},
	{"planning", workflow.KindMalformedReply, "illegal"},
	{"planning", workflow.KindCancel, "illegal"},
	{"planning", workflow.KindApprove, "illegal"},
	{"planning", workflow.KindReject, "illegal"},
	{"planning", workflow.KindResume, "illegal"},
	{"planning", workflow.KindDeadline, "illegal"},
	{"planning", workflow.KindLost, "illegal"},
	{"planning", workflow.KindHeld, "illegal"},
	{"planning", workflow.KindSteppedDown, "illegal"},
	{"planning", workflow.KindAbandoned, "illegal"},
	{"planning", workflow.KindNote, "illegal"},
	{"working", workflow.KindPlanned, "illegal"},
	{"working", workflow.KindForked, "illegal"},
	{"working", workflow.KindMalformed, "illegal"},
	{"working", workflow.KindCompleted, "working [status+artifact step:B status]"},
	{"working", workflow.KindFailed, "failed [status status error]"},
	{"working", workflow.KindMalformedReply, "failed [status status error]"},
	{"working", workflow.KindCancel, "canceled [status cancelled]"},
	{"working", workflow.KindApprove, "illegal"},
	{"working", workflow.KindReject, "illegal"},
	{"working", workflow.KindResume, "illegal"},
	{"working", workflow.KindDeadline, "failed [status error] stop"},
	{"working", workflow.KindLost, "working [step:A status]"},
	{"working", workflow.KindHeld, "working []"},
	{"working", workflow.KindSteppedDown, "working [status]"},
	{"working", workflow.KindAbandoned, "working [step:A status]"},
	{"working", workflow.KindNote, "working [status]"},
	{"input-required", workflow.KindPlanned, "illegal"},
	{"input-required", workflow.KindForked, "illegal"},
	{"input-required", workflow.KindMalformed, "illegal"},
	{"input-required", workflow.KindCompleted, "input-required [status+artifact]"},
	{"input-required", workflow.KindFailed, "failed [status status error]"},
	{"input-required", workflow.KindMalformedReply, "failed [status status error]"},
	{"input-required", workflow.KindCancel, "canceled [status cancelled]"},
	{"input-required", workflow.KindApprove, "working [status step:B status]"},
	{"input-required", workflow.KindReject, "rejected [status error] stop"},
	{"input-required", workflow.KindResume, "illegal"},
	{"input-required", workflow.KindDeadline, "failed [status error] stop"},
	{"input-required", workflow.KindLost, "input-required [step:C status]"},
	{"input-required", workflow.KindHeld, "input-required []"},
	{"input-required", workflow.KindSteppedDown, "input-required [status]"},
	{"input-required", workflow.KindAbandoned, "input-required [step:C status]"},
	{"input-required", workflow.KindNote, "input-required [status]"},
	{"failed", workflow.KindPlanned, "illegal"},
	{"failed", workflow.KindForked, "illegal"},
	{"failed", workflow.KindMalformed, "illegal"},
	{"failed", workflow.KindCompleted, "stale"},
	{"failed", workflow.KindFailed, "stale"},
	{"failed", workflow.KindMalformedReply, "stale"},
	{"failed", workflow.KindCancel, "illegal"},
	{"failed", workflow.KindApprove, "illegal"},
	{"failed", workflow.KindReject, "illegal"},
	{"failed", workflow.KindResume, "working [timer status step:A status]"},
	{"failed", workflow.KindDeadline, "stale"},
	{"failed", workflow.KindLost, "stale"},
	{"failed", workflow.KindHeld, "stale"},
	{"failed", workflow.KindSteppedDown, "stale"},
	{"failed", workflow.KindAbandoned, "stale"},
	{"failed", workflow.KindNote, "stale"},
	{"completed", workflow.KindPlanned, "illegal"},
	{"completed", workflow.KindForked, "illegal"},
	{"completed", workflow.KindMalformed, "illegal"},
	{"completed", workflow.KindCompleted, "stale"},
	{"completed", workflow.KindFailed, "stale"},
	{"completed", workflow.KindMalformedReply, "stale"},
	{"completed", workflow.KindCancel, "illegal"},
	{"completed", workflow.KindApprove, "illegal"},
	{"completed", workflow.KindReject, "illegal"},
	{"completed", workflow.KindResume, "illegal"},
	{"completed", workflow.KindDeadline, "stale"},
	{"completed", workflow.KindLost, "stale"},
	{"completed", workflow.KindHeld, "stale"},
	{"completed", workflow.KindSteppedDown, "stale"},
	{"completed", workflow.KindAbandoned, "stale"},
	{"completed", workflow.KindNote, "stale"},
	{"canceled", workflow.KindPlanned, "illegal"},
	{"canceled", workflow.KindForked, "illegal"},
	{"canceled", workflow.KindMalformed, "illegal"},
	{"canceled", workflow.KindCompleted, "stale"},
	{"canceled", workflow.KindFailed, "stale"},
	{"canceled", workflow.KindMalformedReply, "stale"},
	{"canceled", workflow.KindCancel, "illegal"},
	{"canceled", workflow.KindApprove, "illegal"},
	{"canceled", workflow.KindReject, "illegal"},
	{"canceled", workflow.KindResume, "illegal"},
	{"canceled", workflow.KindDeadline, "stale"},
	{"canceled", workflow.KindLost, "stale"},
	{"canceled", workflow.KindHeld, "stale"},
	{"canceled", workflow.KindSteppedDown, "stale"},
	{"canceled", workflow.KindAbandoned, "stale"},
	{"canceled", workflow.KindNote, "stale"},
	{"rejected", workflow.KindPlanned, "illegal"},
	{"rejected", workflow.KindForked, "illegal"},
	{"rejected", workflow.KindMalformed, "illegal"},
	{"rejected", workflow.KindCompleted, "stale"},
	{"rejected", workflow.KindFailed, "stale"},
	{"rejected", workflow.KindMalformedReply, "stale"},
	{"rejected", workflow.KindCancel, "illegal"},
	{"rejected", workflow.KindApprove, "illegal"},
	{"rejected", workflow.KindReject, "illegal"},
	{"rejected", workflow.KindResume, "illegal"},
	{"rejected", workflow.KindDeadline, "stale"},
	{"rejected", workflow.KindLost, "stale"},
	{"rejected", workflow.KindHeld, "stale"},
	{"rejected", workflow.KindSteppedDown, "stale"},
	{"rejected", workflow.KindAbandoned, "stale"},
	{"rejected", workflow.KindNote, "stale"},
	{"planning", workflow.KindThrottled, "illegal"},
	{"working", workflow.KindThrottled, "working [progress]"},
	{"input-required", workflow.KindThrottled, "input-required [progress]"},
	{"failed", workflow.KindThrottled, "stale"},
	{"completed", workflow.KindThrottled, "stale"},
	{"canceled", workflow.KindThrottled, "stale"},
	{"rejected", workflow.KindThrottled, "stale"},
	{"planning", workflow.KindReleased, "illegal"},
	{"working", workflow.KindReleased, "stale"},
	{"input-required", workflow.KindReleased, "stale"},
	{"failed", workflow.KindReleased, "stale"},
	{"completed", workflow.KindReleased, "stale"},
	{"canceled", workflow.KindReleased, "stale"},
	{"rejected", workflow.KindReleased, "stale"},
	{"waiting", workflow.KindPlanned, "illegal"},
	{"waiting", workflow.KindForked, "illegal"},
	{"waiting", workflow.KindMalformed, "illegal"},
	{"waiting", workflow.KindCompleted, "illegal"},
	{"waiting", workflow.KindFailed, "illegal"},
	{"waiting", workflow.KindMalformedReply, "stale"},
	{"waiting", workflow.KindCancel, "canceled [status cancelled]"},
	{"waiting", workflow.KindApprove, "illegal"},
	{"waiting", workflow.KindReject, "illegal"},
	{"waiting", workflow.KindResume, "illegal"},
	{"waiting", workflow.KindDeadline, "failed [status error] stop"},
	{"waiting", workflow.KindLost, "illegal"},
	{"waiting", workflow.KindHeld, "illegal"},
	{"waiting", workflow.KindSteppedDown, "illegal"},
	{"waiting", workflow.KindAbandoned, "illegal"},
	{"waiting", workflow.KindNote, "submitted [status]"},
	{"waiting", workflow.KindThrottled, "illegal"},
	{"waiting", workflow.KindReleased, "working [status timer step:A status]"},
	{"confirming", workflow.KindPlanned, "illegal"},
	{"confirming", workflow.KindForked, "illegal"},
	{"confirming", workflow.KindMalformed, "illegal"},
	{"confirming", workflow.KindCompleted, "input-required [status+artifact]"},
	{"confirming", workflow.KindFailed, "failed [status status error]"},
	{"confirming", workflow.KindMalformedReply, "failed [status status error]"},
	{"confirming", workflow.KindCancel, "canceled [status cancelled]"},
	{"confirming", workflow.KindApprove, "working [status step:A status]"},
	{"confirming", workflow.KindReject, "rejected [status error] stop"},
	{"confirming", workflow.KindResume, "illegal"},
	{"confirming", workflow.KindDeadline, "failed [status error] stop"},
	{"confirming", workflow.KindLost, "input-required [step:C status]"},
	{"confirming", workflow.KindHeld, "input-required []"},
	{"confirming", workflow.KindSteppedDown, "input-required [status]"},
	{"confirming", workflow.KindAbandoned, "input-required [step:C status]"},
	{"confirming", workflow.KindNote, "input-required [status]"},
	{"confirming", workflow.KindThrottled, "input-required [progress]"},
	{"confirming", workflow.KindReleased, "stale"},
	{"planning", workflow.KindSignal, "illegal"},
	{"planning", workflow.KindWaitDue, "illegal"},
	{"planning", workflow.KindPause, "illegal"},
	{"planning", workflow.KindUnpause, "illegal"},
	{"working", workflow.KindSignal, "working [status]"},
	{"working", workflow.KindWaitDue, "illegal"},
	{"working", workflow.KindPause, "working [status]"},
	{"working", workflow.KindUnpause, "illegal"},
	{"input-required", workflow.KindSignal, "input-required [status]"},
	{"input-required", workflow.KindWaitDue, "illegal"},
	{"input-required", workflow.KindPause, "input-required [status]"},
	{"input-required", workflow.KindUnpause, "illegal"},
	{"failed", workflow.KindSignal, "illegal"},
	{"failed", workflow.KindWaitDue, "stale"},
	{"failed", workflow.KindPause, "illegal"},
	{"failed", workflow.KindUnpause, "illegal"},
	{"completed", workflow.KindSignal, "illegal"},
	{"completed", workflow.KindWaitDue, "stale"},
	{"completed", workflow.KindPause, "illegal"},
	{"completed", workflow.KindUnpause, "illegal"},
	{"canceled", workflow.KindSignal, "illegal"},
	{"canceled", workflow.KindWaitDue, "stale"},
	{"canceled", workflow.KindPause, "illegal"},
	{"canceled", workflow.KindUnpause, "illegal"},
	{"rejected", workflow.KindSignal, "illegal"},
	{"rejected", workflow.KindWaitDue, "stale"},
	{"rejected", workflow.KindPause, "illegal"},
	{"rejected", workflow.KindUnpause, "illegal"},
	{"waiting", workflow.KindSignal, "submitted [status]"},
	{"waiting", workflow.KindWaitDue, "illegal"},
	{"waiting", workflow.KindPause, "submitted [status]"},
	{"waiting", workflow.KindUnpause, "illegal"},
	{"confirming", workflow.KindSignal, "input-required [status]"},
	{"confirming", workflow.KindWaitDue, "illegal"},
	{"confirming", workflow.KindPause, "input-required [status]"},
	{"confirming", workflow.KindUnpause, "illegal"},
	{"paused", workflow.KindPlanned, "illegal"},
	{"paused", workflow.KindForked, "illegal"},
	{"paused", workflow.KindMalformed, "illegal"},
	{"paused", workflow.KindCompleted, "working [status+artifact]"},
	{"paused", workflow.KindFailed, "failed [status status error]"},
	{"paused", workflow.KindMalformedReply, "failed [status status error]"},
	{"paused", workflow.KindCancel, "canceled [status cancelled]"},
	{"paused", workflow.KindApprove, "illegal"},
	{"paused", workflow.KindReject, "illegal"},
	{"paused", workflow.KindResume, "illegal"},
	{"paused", workflow.KindDeadline, "failed [status error] stop"},
	{"paused", workflow.KindLost, "working [step:C status]"},
	{"paused", workflow.KindHeld, "working []"},
	{"paused", workflow.KindSteppedDown, "working [status]"},
	{"paused", workflow.KindAbandoned, "working [step:C status]"},
	{"paused", workflow.KindNote, "working [status]"},
	{"paused", workflow.KindThrottled, "working [progress]"},
	{"paused", workflow.KindReleased, "stale"},
	{"paused", workflow.KindSignal, "working [status]"},
	{"paused", workflow.KindWaitDue, "illegal"},
	{"paused", workflow.KindPause, "illegal"},
	{"paused", workflow.KindUnpause, "working [status step:B status]"},
	{"signal-wait", workflow.KindPlanned, "illegal"},
	{"signal-wait", workflow.KindForked, "illegal"},
	{"signal-wait", workflow.KindMalformed, "illegal"},
	{"signal-wait", workflow.KindCompleted, "illegal"},
	{"signal-wait", workflow.KindFailed, "illegal"},
	{"signal-wait", workflow.KindMalformedReply, "illegal"},
	{"signal-wait", workflow.KindCancel, "canceled [status cancelled]"},
	{"signal-wait", workflow.KindApprove, "illegal"},
	{"signal-wait", workflow.KindReject, "illegal"},
	{"signal-wait", workflow.KindResume, "illegal"},
	{"signal-wait", workflow.KindDeadline, "failed [status error] stop"},
	{"signal-wait", workflow.KindLost, "stale"},
	{"signal-wait", workflow.KindHeld, "stale"},
	{"signal-wait", workflow.KindSteppedDown, "stale"},
	{"signal-wait", workflow.KindAbandoned, "stale"},
	{"signal-wait", workflow.KindNote, "working [status]"},
	{"signal-wait", workflow.KindThrottled, "stale"},
	{"signal-wait", workflow.KindReleased, "stale"},
	{"signal-wait", workflow.KindSignal, "working [status+artifact timer step:B status]"},
	{"signal-wait", workflow.KindWaitDue, "failed [status status error]"},
	{"signal-wait", workflow.KindPause, "working [status]"},
	{"signal-wait", workflow.KindUnpause, "illegal"},
	{"planning", workflow.KindRunning, "illegal"},
	{"working", workflow.KindRunning, "working []"},
	{"input-required", workflow.KindRunning, "input-required []"},
	{"failed", workflow.KindRunning, "stale"},
	{"completed", workflow.KindRunning, "stale"},
	{"canceled", workflow.KindRunning, "stale"},
	{"rejected", workflow.KindRunning, "stale"},
	{"waiting", workflow.KindRunning, "illegal"},
	{"confirming", workflow.KindRunning, "input-required []"},
	{"paused", workflow.KindRunning, "working []"},
	{"signal-wait", workflow.KindRunning, "stale"},
}

func TestApplyTable(t *testing.T) {
	fs := fixtures(t)
	byName := map[string]fixture{}
	for _, f := range fs {
		byName[f.name] = f
	}
	seen := map[string]bool{}
	for _, row := range transitions {
		f, ok := byName[row.state]
		if !ok {
			t.Fatalf("no fixture %q", row.state)
		}
		var in workflow.Input
		for _, i := range inputs(f.step) {
			if i.Kind() == row.kind {
				in = i
			}
		}
		name := row.state + "/" + row.kind.String()
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			cp := clone(t, f.cp)
			before, _ := json.Marshal(cp)
			eff, err := workflow.Apply(cp, in, f.now.Add(time1), policy)
			if got := summary(cp, eff, err); got != row.want {
				t.Errorf("got %s, want %s", got, row.want)
			}
			if err == nil {
				return
			}
			after, _ := json.Marshal(cp)
			if !bytes.Equal(before, after) {
				t.Errorf("a refused input changed the checkpoint:\nbefore %s\nafter  %s", before, after)
			}
			var ie *workflow.IllegalError
			if errors.As(err, &ie) && (ie.State != f.cp.Status || ie.Input != row.kind || !strings.Contains(err.Error(), string(f.cp.Status)) ||
				!strings.Contains(err.Error(), row.kind.String())) {
				t.Errorf("the refusal does not name the state %s and the input %s: %v", f.cp.Status, row.kind, err)
			}
		})
	}
	// The table covers every pair.
	for _, f := range fs {
		for _, k := range workflow.Kinds() {
			if !seen[f.name+"/"+k.String()] {
				t.Errorf("the table has no row for %s/%s", f.name, k)
			}
		}
	}
}

// TestApplyStepInputs covers the step-level checks: a step the plan lacks
// and an attempt never dispatched are refused, an attempt superseded is
// stale, and only the live attempt's failure counts.
func TestApplyStepInputs(t *testing.T) {
	f := fixtures(t)[1] // working: A attempt 1
	lost := clone(t, f.cp)
	drive(t, lost, workflow.Lost{StepID: "A", Attempt: 1}) // A attempt 2; replies of 1 still count
	fenced := clone(t, f.cp)
	drive(t, fenced, workflow.Abandoned{StepID: "A", Attempt: 1}) // A attempt 2; 1 no longer counts
	reply := func(step string, attempt int) workflow.Input {
		return workflow.Completed{StepCompleted: events.StepCompleted{StepID: step, Attempt: attempt, Output: json.RawMessage(`1`)}}
	}
	failure := func(step string, attempt int) workflow.Input {
		return workflow.Failed{StepFailed: events.StepFailed{StepID: step, Attempt: attempt, Error: "x"}}
	}
	for _, c := range []struct {
		name string
		cp   *workflow.Checkpoint
		in   workflow.Input
		want string
	}{
		{"unknown step", f.cp, reply("X", 1), "illegal"},
		{"attempt never dispatched", f.cp, reply("A", 2), "illegal"},
		{"attempt 0", f.cp, reply("A", 0), "stale"},
		{"step not yet dispatched", f.cp, reply("B", 0), "stale"},
		{"reply of a lost attempt counts", lost, reply("A", 1), "working [status+artifact step:B status]"},
		{"reply of the live attempt", lost, reply("A", 2), "working [status+artifact step:B status]"},
		{"failure of a lost attempt does not", lost, failure("A", 1), "stale"},
		{"reply of an abandoned attempt does not", fenced, reply("A", 1), "stale"},
		{"verdict on an old attempt", lost, workflow.Lost{StepID: "A", Attempt: 1}, "stale"},
		{"held twice", func() *workflow.Checkpoint {
			c := clone(t, f.cp)
			drive(t, c, workflow.Held{StepID: "A", Attempt: 1})
			return c
		}(), workflow.Held{StepID: "A", Attempt: 1}, "stale"},
		{"approve a step that awaits nothing", f.cp, workflow.Approve{StepID: "A"}, "illegal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cp := clone(t, c.cp)
			eff, err := workflow.Apply(cp, c.in, f.now.Add(time1), policy)
			if got := summary(cp, eff, err); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

// TestApplyBudget: a workflow that spent its token budget holds the steps
// not yet run for a decision (approve goes on, reject ends it), or fails
// by policy; the complete event carries the usage.
func TestApplyBudget(t *testing.T) {
	spend := func(step string, tokens int64) workflow.Input {
		return workflow.Completed{StepCompleted: events.StepCompleted{StepID: step, Attempt: 1, Output: json.RawMessage(`1`),
			Usage: &events.Usage{PromptTokens: tokens, CompletionTokens: 1, Calls: 1}}}
	}
	start := func(onExceed string) *workflow.Checkpoint {
		cp := workflow.New(workflow.Start{TenantID: "acme", WorkflowID: "budget", Budget: &events.Budget{Tokens: 100, OnExceed: onExceed}}, t0)
		drive(t, cp, workflow.Planned{Plan: chain()})
		return cp
	}
	t.Run("under", func(t *testing.T) {
		cp := start("")
		drive(t, cp, spend("A", 50))
		if cp.Tasks["B"].Status != events.StateWorking || cp.Usage.Tokens() != 51 {
			t.Fatalf("B %s, usage %+v", cp.Tasks["B"].Status, cp.Usage)
		}
	})
	t.Run("pause then approve", func(t *testing.T) {
		cp := start("")
		eff, err := workflow.Apply(cp, spend("A", 150), t0.Add(time.Minute), policy)
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(cp, eff, err); got != "input-required [status+artifact status]" || !cp.BudgetHeld || cp.Tasks["B"].Status != events.StateSubmitted {
			t.Fatalf("over budget: %s, held %v, B %s", got, cp.BudgetHeld, cp.Tasks["B"].Status)
		}
		if eff.Usage.Tokens() != 151 {
			t.Errorf("effects' usage %+v", eff.Usage)
		}
		if _, err := workflow.Apply(cp, workflow.Approve{StepID: "A"}, t0.Add(2*time.Minute), policy); !errors.Is(err, workflow.ErrIllegal) {
			t.Errorf("approving a step that awaits nothing: %v", err)
		}
		eff, err = workflow.Apply(cp, workflow.Approve{Comment: "worth it"}, t0.Add(2*time.Minute), policy)
		if got := summary(cp, eff, err); got != "working [status step:B status]" || cp.BudgetHeld || !cp.BudgetLifted {
			t.Fatalf("approved: %s", got)
		}
		eff, err = workflow.Apply(cp, spend("B", 10), t0.Add(3*time.Minute), policy)
		if err != nil || cp.Status != events.StateCompleted {
			t.Fatalf("B: %v, %s", err, cp.Status)
		}
		var c events.Complete
		_ = json.Unmarshal(eff.Outbox[len(eff.Outbox)-1].Data, &c)
		if c.Usage == nil || c.Usage.Tokens() != 162 || c.Usage.Calls != 2 {
			t.Errorf("complete usage %+v", c.Usage)
		}
	})
	t.Run("pause then reject", func(t *testing.T) {
		cp := start(events.BudgetPause)
		drive(t, cp, spend("A", 150))
		eff, err := workflow.Apply(cp, workflow.Reject{Comment: "too dear"}, t0.Add(time.Hour), policy)
		if got := summary(cp, eff, err); got != "rejected [status error]" || cp.Error.Code != events.CodeBudgetExceeded {
			t.Fatalf("rejected: %s, %+v", got, cp.Error)
		}
	})
	t.Run("fail", func(t *testing.T) {
		cp := start(events.BudgetFail)
		eff, err := workflow.Apply(cp, spend("A", 150), t0.Add(time.Minute), policy)
		if got := summary(cp, eff, err); got != "failed [status+artifact status error]" || cp.Error.Code != events.CodeBudgetExceeded {
			t.Fatalf("failed: %s, %+v", got, cp.Error)
		}
		// Resuming is going on past it.
		eff, err = workflow.Apply(cp, workflow.Resume{}, t0.Add(time.Hour), policy)
		if got := summary(cp, eff, err); got != "working [timer status step:B status]" {
			t.Fatalf("resumed: %s", got)
		}
	})
}
