package workflow

import (
	"fmt"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// cancel ends a workflow on request; its unfinished steps are canceled.
// A rollback drops its turn from its session.
func (x *tx) cancel(in Cancel) error {
	reason := in.Reason
	if in.Rollback && x.cp.Session != nil {
		x.cp.Session.Dropped = true
	}
	if reason == "" {
		reason = "canceled on request"
	}
	x.endSteps(events.StateCanceled, CauseCancel)
	x.setStatus(events.StateCanceled, PhaseDone, CauseCancel)
	x.cp.Canceled = reason
	x.eff.Message = "canceled"
	if err := x.emit(events.TypeStatus, "", events.Status{State: events.StateCanceled, Message: reason}); err != nil {
		return err
	}
	return x.emit(events.TypeCancelled, "", events.Cancelled{Reason: reason})
}

// endSteps moves every step that has not ended to s, in plan order.
func (x *tx) endSteps(s events.State, cause Cause) {
	for _, p := range x.cp.Plan.Steps {
		if t := x.cp.Tasks[p.ID]; t != nil && !t.Status.Terminal() {
			x.setTask(p.ID, t, s, cause)
		}
	}
}

// resume restarts a failed workflow: failed tasks are dispatched again,
// completed ones keep their outputs and are never re-run.
func (x *tx) resume() error {
	cp := x.cp
	n := 0
	for _, p := range cp.Plan.Steps {
		t := cp.Tasks[p.ID]
		if t.Status == events.StateFailed || t.Status == events.StateWorking || t.Status == events.StateCanceled {
			x.setTask(p.ID, t, events.StateSubmitted, CauseResume)
			t.Error, t.CompletedAt = "", nil
			n++
		}
	}
	x.setStatus(events.StateWorking, cp.Phase, CauseResume)
	cp.Error, cp.Deadline = nil, nil
	cp.ResumeCount++
	if cp.OverBudget() {
		cp.BudgetLifted = true // resuming is going on past it
	}
	cp.BudgetHeld = false
	// The watchdog's timer ended with the failure: a new one watches the
	// steps that run again.
	if err := x.armWatch(); err != nil {
		return err
	}
	x.eff.Message = fmt.Sprintf("resumed: %d steps run again", n)
	if err := x.emit(events.TypeStatus, "", events.Status{State: events.StateWorking,
		Message: fmt.Sprintf("resumed (resume %d): %d steps run again, completed steps kept", cp.ResumeCount, n)}); err != nil {
		return err
	}
	return x.advance(CauseResume)
}

// decide applies an approval decision to the step(s) awaiting one.
func (x *tx) decide(step, comment string, reject bool) error {
	cp := x.cp
	var decided []string
	for _, s := range cp.Plan.Steps {
		t := cp.Tasks[s.ID]
		if t.Approval == nil || t.Approval.State != ApprovalPending || (step != "" && step != s.ID) {
			continue
		}
		decided = append(decided, s.ID)
		t.Approval.Comment = comment
		if reject {
			t.Approval.State = ApprovalRejected
			x.setTask(s.ID, t, events.StateRejected, CauseApproval)
			continue
		}
		t.Approval.State = ApprovalApproved
		if t.Approval.BeforeDispatch {
			// Confirmed: advance dispatches it.
			x.setTask(s.ID, t, events.StateSubmitted, CauseApproval)
			if err := x.emit(events.TypeStatus, s.ID, events.Status{State: events.StateSubmitted, StepID: s.ID, Message: "confirmed, to run: " + comment}); err != nil {
				return err
			}
			continue
		}
		x.setTask(s.ID, t, events.StateCompleted, CauseApproval)
		if err := x.emit(events.TypeStatus, s.ID, events.Status{State: events.StateCompleted, StepID: s.ID, Message: "approved: " + comment}); err != nil {
			return err
		}
	}
	budget := cp.BudgetHeld && step == ""
	if budget {
		cp.BudgetHeld = false
		if !reject {
			cp.BudgetLifted = true
			if err := x.emit(events.TypeStatus, "", events.Status{State: events.StateWorking,
				Message: fmt.Sprintf("budget lifted: approved going on past %d tokens (%d spent): %s", cp.Budget.Tokens, cp.Usage.Tokens(), comment)}); err != nil {
				return err
			}
			decided = append(decided, "budget")
		}
	}
	if reject && budget && len(decided) == 0 {
		x.eff.Message = "rejected going on past the budget"
		x.stopOthers("workflow rejected")
		x.setStatus(events.StateRejected, PhaseDone, CauseApproval)
		if err := x.emit(events.TypeStatus, "", events.Status{State: events.StateRejected, Message: "rejected: " + comment}); err != nil {
			return err
		}
		e := events.Error{Code: events.CodeBudgetExceeded, Message: fmt.Sprintf("going on past the budget of %d tokens (%d spent) was rejected: %s",
			cp.Budget.Tokens, cp.Usage.Tokens(), comment)}
		cp.Error = &e
		return x.emit(events.TypeError, "", e)
	}
	if reject {
		x.eff.Message = fmt.Sprintf("rejected %v", decided)
		x.stopOthers("workflow rejected")
		x.setStatus(events.StateRejected, PhaseDone, CauseApproval)
		if err := x.emit(events.TypeStatus, "", events.Status{State: events.StateRejected, Message: "rejected: " + comment}); err != nil {
			return err
		}
		e := events.Error{Code: events.CodeRejected, StepID: decided[0], Message: fmt.Sprintf("step %s rejected: %s", decided[0], comment)}
		cp.Error = &e
		return x.emit(events.TypeError, decided[0], e)
	}
	x.eff.Message = fmt.Sprintf("approved %v", decided)
	return x.advance(CauseApproval)
}

// expireReason is the cancel reason workers are given when a workflow's
// deadline passes.
const expireReason = "workflow timed out"

// expire fails a workflow whose deadline passed, and asks for its running
// steps to be stopped.
func (x *tx) expire() error {
	cp := x.cp
	x.endSteps(events.StateCanceled, CauseDeadline)
	limit := "its deadline"
	if cp.Deadline != nil {
		limit = fmt.Sprintf("its %s limit", cp.Deadline.Sub(cp.CreatedAt).Round(time.Millisecond))
	}
	x.eff.StopSteps = expireReason
	return x.fail(events.Error{Code: events.CodeTimeout, Message: "workflow timed out: it did not finish within " + limit}, CauseDeadline)
}

// lost dispatches a lost step attempt again as the next attempt (replies
// of either count: Task.Since), or fails the step once too many were lost
// in a row.
func (x *tx) lost(in Lost) error {
	cp := x.cp
	t := cp.Tasks[in.StepID]
	if t.Since == 0 {
		t.Since = t.Attempt
	}
	if lost := t.Attempt - t.Since + 1; lost >= x.p.MaxLost {
		return x.failed(events.StepFailed{StepID: in.StepID, Capability: t.Capability, Attempt: t.Attempt, Worker: "orchestrator", Error: fmt.Sprintf(
			"%d attempts in a row neither stayed queued nor were answered where the orchestrator reads replies (%s): given up", lost, subjects.AllReplies)})
	}
	s, _ := cp.PlanStep(in.StepID)
	deps, _ := cp.Inputs(s)
	if err := x.request(s, t, deps, CauseRedispatch); err != nil {
		return err
	}
	cp.ResumeCount++
	return x.emit(events.TypeStatus, in.StepID, events.Status{State: events.StateWorking, StepID: in.StepID, Recovery: events.RecoveryLost, Message: fmt.Sprintf(
		"recovery: step %s attempt %d: its request is no longer queued and no reply came (the server lost one): dispatched again as attempt %d",
		in.StepID, in.Attempt, t.Attempt)})
}

// abandoned gives up a held attempt: the step runs as a new attempt whose
// Since is itself, so that a reply of the old attempt never counts
// (attempt fencing).
func (x *tx) abandoned(in Abandoned) error {
	cp := x.cp
	t := cp.Tasks[in.StepID]
	s, _ := cp.PlanStep(in.StepID)
	deps, _ := cp.Inputs(s)
	if err := x.request(s, t, deps, CauseRecovery); err != nil {
		return err
	}
	t.Since = t.Attempt
	cp.ResumeCount++
	return x.emit(events.TypeStatus, in.StepID, events.Status{State: events.StateWorking, StepID: in.StepID, Message: in.Message, Recovery: events.RecoveryRedispatch})
}

// throttled tells the workflow's followers that a step waits for its
// tenant's limit on its capability.
func (x *tx) throttled(in Throttled) error {
	cp := x.cp
	done := 0
	for id := range cp.Tasks {
		if cp.Settled(id) {
			done++
		}
	}
	until := in.Until.UTC()
	return x.emit(events.TypeProgress, in.StepID, events.Progress{
		CompletedSteps: done, TotalSteps: len(cp.Tasks), Percent: 100 * float64(done) / float64(max(len(cp.Tasks), 1)), StepID: in.StepID,
		Message:        fmt.Sprintf("step %s throttled: %s; it waits in its queue until about %s", in.StepID, in.Reason, until.Format(time.RFC3339Nano)),
		ThrottledUntil: &until,
	})
}
