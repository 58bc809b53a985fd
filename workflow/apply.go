package workflow

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// Apply moves a workflow: it applies one input to cp at time now and
// returns the effects to carry out. It changes cp in place only when it
// returns no error; an input the state does not accept is an
// *IllegalError, one that came late or twice is ErrStale, and in both
// cases cp is as it was. Apply is pure: it does no I/O and reads no clock,
// so the same checkpoint, input, time and policy always give the same
// result.
//
// The states and the inputs each accepts (anything else is refused):
//
//	planning (submitted)   Planned, Forked, Malformed
//	waiting (submitted)    Released, Cancel, Deadline, Note, Signal, Pause, Unpause
//	working                replies, Cancel, Deadline, the watchdog's verdicts, Note,
//	                       Signal, WaitDue, Pause (if not paused), Unpause (if paused)
//	input-required         as working, and Approve, Reject
//	failed                 Resume
//	completed, canceled,   none
//	rejected
//
// A paused workflow (working or input-required, phase paused) accepts the
// same inputs but dispatches nothing new (pause.go). A wait step (wait.go)
// accepts WaitDue and Signal, never a reply or a watchdog's verdict.
//
// Replies, deadlines, verdicts and notes that reach a workflow or step
// that has moved on are ErrStale rather than refused: they are the normal
// late deliveries of an at-least-once bus.
func Apply(cp *Checkpoint, in Input, now time.Time, p Policy) (Effects, error) {
	if cp == nil || in == nil {
		return Effects{}, errors.New("workflow: Apply needs a checkpoint and an input")
	}
	now = Clock(now)
	if p.MaxLost <= 0 {
		p.MaxLost = DefaultMaxLost
	}
	if err := admit(cp, in); err != nil {
		return Effects{}, err
	}
	x := &tx{cp: cp, now: now.UTC(), p: p}
	was := cp.Status
	if err := x.apply(in); err != nil {
		return Effects{}, err
	}
	cp.UpdatedAt = x.now
	if !was.Terminal() && cp.Status.Terminal() {
		x.eff.Outcome = cp.Status
	}
	return x.eff, nil
}

// waiting reports whether cp is planned and waits for a slot of its
// concurrency key (Planned.Wait).
func waiting(cp *Checkpoint) bool {
	return cp.Status == events.StateSubmitted && cp.Phase == PhaseWaiting
}

// planning reports whether cp is a new workflow not yet planned.
func planning(cp *Checkpoint) bool {
	return cp.Status == events.StateSubmitted && cp.Phase == PhasePlanning && len(cp.Tasks) == 0
}

// admit decides, without changing anything, whether cp's state accepts in.
func admit(cp *Checkpoint, in Input) error {
	switch in := in.(type) {
	case Planned, Forked, Malformed:
		if !planning(cp) {
			return illegal(cp, in, "the workflow was planned already")
		}
		return nil
	case Completed:
		return replied(cp, in, in.StepID)(live(cp, in, in.StepID, in.Attempt, false))
	case Failed:
		return replied(cp, in, in.StepID)(live(cp, in, in.StepID, in.Attempt, true))
	case MalformedReply:
		t, ok := cp.Tasks[in.StepID]
		if !ok {
			return illegal(cp, in, "the plan has no step %q", in.StepID)
		}
		if cp.Status.Terminal() || t.Status != events.StateWorking {
			return fmt.Errorf("%w: step %s is %s", ErrStale, in.StepID, t.Status)
		}
		return replied(cp, in, in.StepID)(t, nil)
	case Cancel:
		return notEnded(cp, in)
	case Approve:
		return awaiting(cp, in, in.StepID)
	case Reject:
		return awaiting(cp, in, in.StepID)
	case Resume:
		if cp.Status != events.StateFailed {
			return illegal(cp, in, "only a failed workflow can be resumed; this one is %s", cp.Status)
		}
		if len(cp.Stages) == 0 {
			return illegal(cp, in, "the workflow failed before it had a valid plan; submit a corrected one")
		}
		return nil
	case Deadline:
		if planning(cp) {
			return illegal(cp, in, "the workflow has no plan yet")
		}
		if cp.Status.Terminal() {
			return fmt.Errorf("%w: the workflow is %s", ErrStale, cp.Status)
		}
		return nil
	case Lost:
		return worked(live(cp, in, in.StepID, in.Attempt, true))
	case Held:
		t, err := live(cp, in, in.StepID, in.Attempt, true)
		if err = worked(t, err); err == nil && t.HeldSince != nil {
			return fmt.Errorf("%w: step %s attempt %d was seen held already", ErrStale, in.StepID, in.Attempt)
		}
		return err
	case Running:
		return worked(live(cp, in, in.StepID, in.Attempt, true))
	case SteppedDown:
		t, err := live(cp, in, in.StepID, in.Attempt, true)
		if err = worked(t, err); err == nil && t.SteppedDownAt != nil {
			return fmt.Errorf("%w: step %s attempt %d had its consumer stepped down already", ErrStale, in.StepID, in.Attempt)
		}
		return err
	case Abandoned:
		return worked(live(cp, in, in.StepID, in.Attempt, true))
	case Throttled:
		return worked(live(cp, in, in.StepID, in.Attempt, true))
	case Released:
		if planning(cp) {
			return illegal(cp, in, "the workflow has no plan yet")
		}
		if !waiting(cp) {
			return fmt.Errorf("%w: the workflow is %s, not waiting for its concurrency key", ErrStale, cp.Status)
		}
		return nil
	case Note:
		if planning(cp) {
			return illegal(cp, in, "the workflow has no plan yet")
		}
		if cp.Status.Terminal() {
			return fmt.Errorf("%w: the workflow is %s", ErrStale, cp.Status)
		}
		return nil
	case Signal:
		return admitSignal(cp, in)
	case WaitDue:
		t, err := live(cp, in, in.StepID, in.Attempt, true)
		if err == nil && (t.Wait == nil || t.Wait.At == nil) {
			return illegal(cp, in, "step %s does not wait for a time", in.StepID)
		}
		return err
	case Pause:
		if err := notEnded(cp, in); err != nil {
			return err
		}
		if cp.Paused {
			return illegal(cp, in, "the workflow is paused already")
		}
		return nil
	case Unpause:
		if err := notEnded(cp, in); err != nil {
			return err
		}
		if !cp.Paused {
			return illegal(cp, in, "the workflow is not paused")
		}
		return nil
	}
	return fmt.Errorf("workflow: unknown input %T", in)
}

// admitSignal accepts a signal for a workflow that has not ended, unless
// it came before (stale) or no more of its name can be kept.
func admitSignal(cp *Checkpoint, in Signal) error {
	if err := notEnded(cp, in); err != nil {
		return err
	}
	if in.Name == "" {
		return illegal(cp, in, "a signal needs a name")
	}
	if cp.seenSignal(in.ID) {
		return fmt.Errorf("%w: signal %q (%s) was received already", ErrStale, in.Name, in.ID)
	}
	if _, t := cp.waitingFor(in.Name); t != nil {
		return nil
	}
	if n := len(cp.Signals[in.Name]); n >= MaxSignals {
		return illegal(cp, in, "%d signals %q are kept already for a wait step not reached yet; no more are kept", n, in.Name)
	}
	if _, ok := cp.Signals[in.Name]; !ok && len(cp.Signals) >= MaxSignalNames {
		return illegal(cp, in, "signals of %d names are kept already for wait steps not reached yet; no more are kept", len(cp.Signals))
	}
	return nil
}

// replied refuses a reply to a wait step, which no worker runs.
func replied(cp *Checkpoint, in Input, step string) func(*Task, error) error {
	return func(t *Task, err error) error {
		if err == nil && t.Wait != nil {
			return illegal(cp, in, "step %s is a wait step: its timer or its signal ends it, not a reply", step)
		}
		return err
	}
}

// worked makes a watchdog's verdict on a wait step stale: no worker holds
// it, so there is nothing to lose.
func worked(t *Task, err error) error {
	if err == nil && t.Wait != nil {
		return fmt.Errorf("%w: step is a wait step, which no worker runs", ErrStale)
	}
	return err
}

// live returns the task an input about a step attempt applies to. A step
// the plan lacks or an attempt never dispatched is illegal; a workflow
// ended, a step no longer working, or an attempt the plan moved past is
// stale. With exact, only the live attempt counts; without, so do those
// since the last dispatch by the plan (Task.Since), which the watchdog
// gave up as lost: whichever answer comes first is recorded.
func live(cp *Checkpoint, in Input, step string, attempt int, exact bool) (*Task, error) {
	t, ok := cp.Tasks[step]
	if !ok {
		return nil, illegal(cp, in, "the plan has no step %q", step)
	}
	if attempt > t.Attempt {
		return nil, illegal(cp, in, "step %s attempt %d was never dispatched (its latest is %d)", step, attempt, t.Attempt)
	}
	if cp.Status.Terminal() || t.Status != events.StateWorking {
		return nil, fmt.Errorf("%w: step %s is %s (workflow %s)", ErrStale, step, t.Status, cp.Status)
	}
	since := t.Since
	if since == 0 || since > t.Attempt { // a checkpoint from before Since
		since = t.Attempt
	}
	if exact {
		since = t.Attempt
	}
	if attempt < since {
		return nil, fmt.Errorf("%w: step %s attempt %d is superseded by attempt %d", ErrStale, step, attempt, t.Attempt)
	}
	return t, nil
}

func notEnded(cp *Checkpoint, in Input) error {
	if cp.Status.Terminal() {
		return illegal(cp, in, "workflow already %s", cp.Status)
	}
	if planning(cp) {
		return illegal(cp, in, "the workflow has no plan yet")
	}
	return nil
}

// awaiting checks that a decision has a step to apply to.
func awaiting(cp *Checkpoint, in Input, step string) error {
	if err := notEnded(cp, in); err != nil {
		return err
	}
	if cp.BudgetHeld && step == "" {
		return nil
	}
	for _, s := range cp.Plan.Steps {
		t := cp.Tasks[s.ID]
		if t != nil && t.Approval != nil && t.Approval.State == ApprovalPending && (step == "" || step == s.ID) {
			return nil
		}
	}
	if step != "" {
		return illegal(cp, in, "step %q does not await a decision", step)
	}
	return illegal(cp, in, "no step awaits a decision")
}

// tx is one transition under way: the checkpoint it changes and the
// effects it gathers.
type tx struct {
	cp  *Checkpoint
	now time.Time
	p   Policy
	eff Effects
}

func (x *tx) apply(in Input) error {
	switch in := in.(type) {
	case Planned:
		return x.planned(in)
	case Forked:
		return x.forked(in)
	case Malformed:
		return x.fail(in.Error, CausePlan)
	case Completed:
		return x.completed(in.StepCompleted)
	case Failed:
		return x.failed(in.StepFailed)
	case MalformedReply:
		t := x.cp.Tasks[in.StepID]
		return x.failed(events.StepFailed{StepID: in.StepID, Capability: t.Capability, Attempt: t.Attempt, Error: in.Error})
	case Cancel:
		return x.cancel(in)
	case Approve:
		return x.decide(in.StepID, in.Comment, false)
	case Reject:
		return x.decide(in.StepID, in.Comment, true)
	case Resume:
		return x.resume()
	case Deadline:
		return x.expire()
	case Lost:
		return x.lost(in)
	case Held:
		now := x.now
		x.cp.Tasks[in.StepID].HeldSince = &now
		return nil
	case Running:
		now := x.now
		x.cp.Tasks[in.StepID].RenewedAt = &now
		return nil
	case SteppedDown:
		now := x.now
		x.cp.Tasks[in.StepID].SteppedDownAt = &now
		return x.emit(events.TypeStatus, in.StepID, events.Status{State: events.StateWorking, StepID: in.StepID,
			Message: in.Message, Recovery: events.RecoveryStepDown})
	case Abandoned:
		return x.abandoned(in)
	case Throttled:
		return x.throttled(in)
	case Released:
		return x.released(in)
	case Note:
		return x.emit(events.TypeStatus, "", events.Status{State: x.cp.Status, Message: in.Message, Recovery: in.Recovery})
	case Signal:
		return x.signal(in)
	case WaitDue:
		return x.waitDue(in)
	case Pause:
		return x.pause(in)
	case Unpause:
		return x.unpause(in)
	}
	return fmt.Errorf("workflow: unknown input %T", in)
}

// emit queues a client event with the workflow's next dedup key.
func (x *tx) emit(typ events.Type, step string, payload any) error {
	data, err := events.MarshalChecked(payload)
	if err != nil {
		return err
	}
	cp := x.cp
	subj, err := subjects.Events(cp.TenantID, cp.WorkflowID)
	if err != nil {
		return err
	}
	x.eff.Outbox = append(x.eff.Outbox, Outgoing{
		Subject: subj, MsgID: events.EventKey(cp.TenantID, cp.WorkflowID, cp.EventCount),
		Type: typ, StepID: step, Time: x.now, Data: data,
	})
	cp.EventCount++
	return nil
}

// setStatus is the one write of a workflow's status and phase. A paused
// workflow that is working or input-required is in phase paused; one
// that ends is no longer paused.
func (x *tx) setStatus(s events.State, phase Phase, cause Cause) {
	if x.cp.Status != s {
		x.eff.Transitions = append(x.eff.Transitions, Transition{From: x.cp.Status, To: s, Cause: cause})
	}
	switch {
	case s.Terminal():
		x.cp.Paused, x.cp.PauseReason = false, ""
	case x.cp.Paused && s != events.StateSubmitted:
		phase = PhasePaused
	}
	x.cp.Status, x.cp.Phase = s, phase
}

// setTask is the one write of a step's status.
func (x *tx) setTask(id string, t *Task, s events.State, cause Cause) {
	x.eff.Transitions = append(x.eff.Transitions, Transition{StepID: id, Capability: t.Capability, From: t.Status, To: s, Cause: cause})
	t.Status = s
}

// fail ends the workflow with an error event.
func (x *tx) fail(e events.Error, cause Cause) error {
	x.setStatus(events.StateFailed, PhaseDone, cause)
	x.cp.Error = &e
	if err := x.emit(events.TypeStatus, "", events.Status{State: events.StateFailed, Message: e.Message}); err != nil {
		return err
	}
	return x.emit(events.TypeError, e.StepID, e)
}
