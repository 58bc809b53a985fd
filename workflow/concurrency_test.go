package workflow_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// TestApplyConcurrency: what the engine does for each policy of a
// concurrency key at its limit; the orchestrator decides which applies.
func TestApplyConcurrency(t *testing.T) {
	key := &events.Concurrency{Key: "user-7", Limit: 1}
	start := func() *workflow.Checkpoint {
		return workflow.New(workflow.Start{TenantID: "acme", WorkflowID: "wf", Query: "q", Concurrency: key,
			Session: &workflow.SessionState{ID: "s1"}}, t0)
	}
	lastStatus := func(eff workflow.Effects) events.Status {
		var st events.Status
		for _, m := range eff.Outbox {
			if m.Type == events.TypeStatus {
				_ = json.Unmarshal(m.Data, &st)
			}
		}
		return st
	}
	t.Run("queue waits, then starts when released", func(t *testing.T) {
		cp := start()
		eff, err := workflow.Apply(cp, workflow.Planned{Plan: chain(), TimeoutMS: 60_000, Wait: `waiting for concurrency key "user-7": 1 running`}, t0, policy)
		if got := summary(cp, eff, err); got != "submitted [status timer status]" {
			t.Fatalf("planned to wait: %s", got)
		}
		if cp.Phase != workflow.PhaseWaiting || len(eff.Dispatches) != 0 || cp.Tasks["A"].Status != events.StateSubmitted {
			t.Fatalf("waiting: phase %s, dispatches %v, A %s", cp.Phase, eff.Dispatches, cp.Tasks["A"].Status)
		}
		if st := lastStatus(eff); !strings.Contains(st.Message, `waiting for concurrency key "user-7": 1 running`) {
			t.Errorf("status %q does not say what it waits for", st.Message)
		}
		eff, err = workflow.Apply(cp, workflow.Released{Message: "started: slot free"}, t0.Add(time.Second), policy)
		if got := summary(cp, eff, err); got != "working [status timer step:A status]" || cp.Phase != workflow.PhaseExecuting {
			t.Fatalf("released: %s, phase %s", got, cp.Phase)
		}
		if eff.Transitions[0] != (workflow.Transition{From: events.StateSubmitted, To: events.StateWorking, Cause: workflow.CauseRelease}) {
			t.Errorf("first transition %v", eff.Transitions[0])
		}
		if _, err := workflow.Apply(cp, workflow.Released{}, t0.Add(2*time.Second), policy); summary(cp, eff, err) != "stale" {
			t.Errorf("a second release: %v", err)
		}
	})
	t.Run("queue: a waiting workflow's deadline still runs", func(t *testing.T) {
		cp := start()
		drive(t, cp, workflow.Planned{Plan: chain(), TimeoutMS: 1000, Wait: "waiting"})
		eff, err := workflow.Apply(cp, workflow.Deadline{}, t0.Add(time.Minute), policy)
		if got := summary(cp, eff, err); got != "failed [status error] stop" || eff.Outcome != events.StateFailed {
			t.Fatalf("deadline while waiting: %s, outcome %s", got, eff.Outcome)
		}
	})
	t.Run("cancel_newest: created canceled", func(t *testing.T) {
		cp := start()
		reason := `canceled at once: concurrency key "user-7" has 1 running (limit 1, policy cancel_newest)`
		eff, err := workflow.Apply(cp, workflow.Planned{Plan: chain(), Cancel: reason}, t0, policy)
		if got := summary(cp, eff, err); got != "canceled [status status cancelled]" || eff.Outcome != events.StateCanceled || cp.Canceled != reason {
			t.Fatalf("canceled newest: %s, outcome %s, %q", got, eff.Outcome, cp.Canceled)
		}
		var c events.Cancelled
		_ = json.Unmarshal(eff.Outbox[len(eff.Outbox)-1].Data, &c)
		if c.Reason != reason {
			t.Errorf("cancelled event says %q", c.Reason)
		}
		for id, task := range cp.Tasks {
			if task.Status != events.StateCanceled {
				t.Errorf("step %s %s", id, task.Status)
			}
		}
	})
	t.Run("cancel_in_progress: the running one is canceled", func(t *testing.T) {
		for _, rollback := range []bool{false, true} {
			cp := start()
			drive(t, cp, workflow.Planned{Plan: chain()})
			eff, err := workflow.Apply(cp, workflow.Cancel{Reason: "interrupted by wf2", Rollback: rollback}, t0.Add(time.Minute), policy)
			if got := summary(cp, eff, err); got != "canceled [status cancelled]" || cp.Session.Dropped != rollback {
				t.Fatalf("rollback %v: %s, dropped %v", rollback, got, cp.Session.Dropped)
			}
		}
	})
}
