package workflow_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// waitPlan is a wait step W with input in, and B after it.
func waitPlan(in string) events.Plan {
	return events.Plan{Steps: []events.PlanStep{
		{ID: "W", Capability: workflow.CapabilityWait, Input: json.RawMessage(in)},
		{ID: "B", Capability: "echo", DependsOn: []string{"W"}},
	}}
}

func apply(t *testing.T, cp *workflow.Checkpoint, in workflow.Input, at time.Time) (workflow.Effects, string) {
	t.Helper()
	eff, err := workflow.Apply(cp, in, at, policy)
	return eff, summary(cp, eff, err)
}

// timerOf returns the wait timer in an outbox.
func timerOf(t *testing.T, eff workflow.Effects) workflow.Timer {
	t.Helper()
	for _, m := range eff.Outbox {
		var tm workflow.Timer
		if m.Type == events.TypeDeadline && json.Unmarshal(m.Data, &tm) == nil && tm.Step != "" {
			return tm
		}
	}
	t.Fatalf("no wait timer in %+v", eff.Outbox)
	return workflow.Timer{}
}

// TestApplyWait: a wait step holds no worker (no step request), ends by
// its timer or its signal, with the output the plan's readers get.
func TestApplyWait(t *testing.T) {
	t.Run("signal completes it with the body", func(t *testing.T) {
		cp := fresh("sig")
		eff, got := apply(t, cp, workflow.Planned{Plan: waitPlan(`{"signal":"approved"}`)}, t0)
		if got != "working [status status status]" || len(eff.Dispatches) != 0 || cp.Tasks["W"].Status != events.StateWorking {
			t.Fatalf("planned: %s, dispatches %v", got, eff.Dispatches)
		}
		_, got = apply(t, cp, workflow.Signal{Name: "approved", Data: json.RawMessage(`{"by":"ana"}`), ID: "s1"}, t0.Add(time.Hour))
		if got != "working [status+artifact timer step:B status]" || string(cp.Tasks["W"].Output) != `{"by":"ana"}` {
			t.Fatalf("signaled: %s, output %s", got, cp.Tasks["W"].Output)
		}
		// The same signal again (a retried request) is stale; another is kept.
		if _, err := workflow.Apply(cp, workflow.Signal{Name: "approved", ID: "s1"}, t0.Add(time.Hour), policy); !errors.Is(err, workflow.ErrStale) {
			t.Errorf("the same signal again: %v", err)
		}
	})
	t.Run("a signal sent early is kept", func(t *testing.T) {
		cp := fresh("early")
		plan := events.Plan{Steps: []events.PlanStep{
			{ID: "A", Capability: "echo"},
			{ID: "W", Capability: workflow.CapabilityWait, DependsOn: []string{"A"}, Input: json.RawMessage(`{"signal":"go","timeout":"1h"}`)},
			{ID: "B", Capability: "echo", DependsOn: []string{"W"}},
		}}
		drive(t, cp, workflow.Planned{Plan: plan})
		_, got := apply(t, cp, workflow.Signal{Name: "go", Data: json.RawMessage(`"early"`), ID: "s1"}, t0.Add(time.Minute))
		if got != "working [status]" || len(cp.Signals["go"]) != 1 {
			t.Fatalf("early signal: %s, kept %v", got, cp.Signals)
		}
		_, got = apply(t, cp, done("A", `"a"`), t0.Add(2*time.Minute))
		if got != "working [status+artifact status+artifact step:B status]" || string(cp.Tasks["W"].Output) != `"early"` || cp.Signals != nil {
			t.Fatalf("A done: %s, W output %s, kept %v", got, cp.Tasks["W"].Output, cp.Signals)
		}
	})
	t.Run("kept signals are bounded", func(t *testing.T) {
		cp := fresh("bound")
		drive(t, cp, workflow.Planned{Plan: chain()})
		for i := range workflow.MaxSignals {
			if _, err := workflow.Apply(cp, workflow.Signal{Name: "x", ID: fmt.Sprint(i)}, t0.Add(time.Minute), policy); err != nil {
				t.Fatal(err)
			}
		}
		_, err := workflow.Apply(cp, workflow.Signal{Name: "x", ID: "one more"}, t0.Add(time.Minute), policy)
		if !errors.Is(err, workflow.ErrIllegal) || !strings.Contains(err.Error(), "no more are kept") {
			t.Errorf("signal past the bound: %v", err)
		}
	})
	for _, c := range []struct {
		onTimeout, want, output string
	}{
		{`"fail"`, "failed [status status error]", ""},
		{`"continue"`, "working [status+artifact timer step:B status]", `{"signal":"go","timed_out":true}`},
	} {
		t.Run("timeout "+c.onTimeout, func(t *testing.T) {
			cp := fresh("timeout")
			eff, _ := apply(t, cp, workflow.Planned{Plan: waitPlan(`{"signal":"go","timeout":"24h","on_timeout":` + c.onTimeout + `}`)}, t0)
			tm := timerOf(t, eff)
			if tm.Step != "W" || tm.Attempt != 1 || !tm.At.Equal(t0.Add(24*time.Hour)) {
				t.Fatalf("timer %+v", tm)
			}
			_, got := apply(t, cp, workflow.WaitDue{StepID: tm.Step, Attempt: tm.Attempt}, tm.At)
			if got != c.want || (c.output != "" && string(cp.Tasks["W"].Output) != c.output) {
				t.Fatalf("timed out: %s, output %s", got, cp.Tasks["W"].Output)
			}
			// A signal after the timeout reaches no one: kept, or refused once ended.
			if _, err := workflow.Apply(cp, workflow.WaitDue{StepID: "W", Attempt: 1}, tm.At, policy); !errors.Is(err, workflow.ErrStale) {
				t.Errorf("timer again: %v", err)
			}
		})
	}
	t.Run("duration", func(t *testing.T) {
		cp := fresh("sleep")
		eff, _ := apply(t, cp, workflow.Planned{Plan: waitPlan(`{"duration":"10m"}`)}, t0)
		tm := timerOf(t, eff)
		if !tm.At.Equal(t0.Add(10*time.Minute)) || cp.Tasks["W"].Wait.At == nil {
			t.Fatalf("timer %+v", tm)
		}
		if _, err := workflow.Apply(cp, workflow.Completed{StepCompleted: events.StepCompleted{StepID: "W", Attempt: 1}}, t0, policy); !errors.Is(err, workflow.ErrIllegal) {
			t.Errorf("a reply to a wait step: %v", err)
		}
		if _, err := workflow.Apply(cp, workflow.Lost{StepID: "W", Attempt: 1}, t0, policy); !errors.Is(err, workflow.ErrStale) {
			t.Errorf("the watchdog's verdict on a wait step: %v", err)
		}
		_, got := apply(t, cp, workflow.WaitDue{StepID: "W", Attempt: 1}, tm.At)
		if got != "working [status+artifact timer step:B status]" || !strings.Contains(string(cp.Tasks["W"].Output), `"waited":"10m0s"`) {
			t.Fatalf("due: %s, output %s", got, cp.Tasks["W"].Output)
		}
	})
	t.Run("until passed completes at once", func(t *testing.T) {
		cp := fresh("past")
		_, got := apply(t, cp, workflow.Planned{Plan: waitPlan(`{"until":"2020-01-01T00:00:00Z"}`)}, t0)
		if !strings.HasSuffix(got, "step:B status]") || cp.Tasks["W"].Status != events.StateCompleted {
			t.Fatalf("planned: %s", got)
		}
	})
	t.Run("a bad input is refused when planned", func(t *testing.T) {
		cp := fresh("bad")
		plan := waitPlan(`{"signal":"go","timeout":"soon"}`)
		_, got := apply(t, cp, workflow.Planned{Plan: plan}, t0)
		if got != "failed [status status error]" || cp.Error.Pointer != "/plan/steps/0/input/timeout" || cp.Error.Code != events.CodeInvalidInput {
			t.Fatalf("planned: %s, %+v", got, cp.Error)
		}
	})
	t.Run("resume waits again", func(t *testing.T) {
		cp := fresh("again")
		drive(t, cp, workflow.Planned{Plan: waitPlan(`{"signal":"go","timeout":"1h"}`)}, workflow.WaitDue{StepID: "W", Attempt: 1})
		eff, got := apply(t, cp, workflow.Resume{}, t0.Add(2*time.Hour))
		if got != "working [timer status timer status]" || timerOf(t, eff).Attempt != 2 {
			t.Fatalf("resumed: %s", got)
		}
	})
}

// TestApplyPause: a paused workflow records replies but dispatches
// nothing until unpaused; a wait already waiting still ends.
func TestApplyPause(t *testing.T) {
	cp := fresh("pause")
	drive(t, cp, workflow.Planned{Plan: chain()})
	_, got := apply(t, cp, workflow.Pause{Reason: "deploy"}, t0.Add(time.Minute))
	if got != "working [status]" || cp.Phase != workflow.PhasePaused || !cp.Paused {
		t.Fatalf("paused: %s, phase %s", got, cp.Phase)
	}
	eff, got := apply(t, cp, done("A", `"a"`), t0.Add(2*time.Minute))
	if got != "working [status+artifact]" || len(eff.Dispatches) != 0 || cp.Tasks["B"].Status != events.StateSubmitted {
		t.Fatalf("A done while paused: %s", got)
	}
	_, got = apply(t, cp, workflow.Unpause{}, t0.Add(3*time.Minute))
	if got != "working [status step:B status]" || cp.Phase != workflow.PhaseExecuting || cp.Paused {
		t.Fatalf("unpaused: %s, phase %s", got, cp.Phase)
	}
	// Ended, it is no longer paused.
	drive(t, cp, workflow.Pause{})
	_, got = apply(t, cp, workflow.Cancel{}, t0.Add(time.Hour))
	if got != "canceled [status cancelled]" || cp.Paused || cp.Phase != workflow.PhaseDone {
		t.Fatalf("canceled while paused: %s, paused %v", got, cp.Paused)
	}
}
