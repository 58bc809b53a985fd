package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// ControlQueue is the queue group orchestrators share on control subjects:
// one of them applies each control message. Workers subscribe without a
// queue, so every worker sees every cancel.
const ControlQueue = "orchestrators"

// handleControl applies a control message and answers it if asked.
// Messages an orchestrator sent itself (the cancel that tells workers to
// stop a timed-out workflow's steps) are for workers only.
func (o *Orchestrator) handleControl(ctx context.Context, n *bus.Notice) {
	if n.Envelope.Source == events.SourceOrchestrator {
		return
	}
	res, err := o.control(ctx, n)
	if err != nil {
		o.log.Warn("control", "subject", n.Subject, "source", n.Envelope.Source, "err", err)
		b, _ := json.Marshal(events.ControlAnswer{Error: err.Error(), Unavailable: bus.Transient(err) || errors.Is(err, bus.ErrConflict)})
		_ = n.Respond(b)
		return
	}
	b, _ := json.Marshal(res)
	_ = n.Respond(b)
}

// ErrNoWorkflow is returned for control of a workflow that does not exist.
var ErrNoWorkflow = errors.New("orchestrator: no such workflow")

func (o *Orchestrator) control(ctx context.Context, n *bus.Notice) (events.ControlResult, error) {
	// events.DecodeControl checked the subject, the type and the tenant.
	p, err := subjects.Parse(n.Subject)
	if err != nil {
		return events.ControlResult{}, fmt.Errorf("control on %q: %w", n.Subject, err)
	}
	c := n.Control
	res := events.ControlResult{WorkflowID: p.Last}
	switch c.Action {
	case events.ActionCancel:
		// Recorded before the transition, so that no step dispatched in
		// between can run; withdrawn below if the cancel does not apply.
		if err := o.recordCancel(ctx, p.Tenant, p.Last, c.Reason); err != nil {
			return res, err
		}
	case events.ActionResume:
		// A failed workflow may carry a cancel record (a timeout, or a
		// cancel that came too late to apply): clear it before the steps
		// go out again, or workers would drop them.
		if cp, err := o.Checkpoint(ctx, p.Tenant, p.Last); err == nil && cp.Status == events.StateFailed {
			if err := o.clearCancel(ctx, p.Tenant, p.Last); err != nil {
				return res, err
			}
		}
	}
	err = o.transition(ctx, p.Tenant, p.Last, func(cp *Checkpoint) error {
		res.Applied, res.Message = false, ""
		var err error
		switch c.Action {
		case events.ActionCancel:
			err = o.cancel(cp, c, &res)
		case events.ActionResume:
			err = o.resume(cp, &res)
		case events.ActionApprove, events.ActionReject:
			err = o.decide(cp, c, &res)
		default:
			err = fmt.Errorf("unknown action %q", c.Action)
		}
		res.Status = cp.Status
		if err == nil && !res.Applied {
			return errNoChange
		}
		return err
	})
	if c.Action == events.ActionCancel && err == nil && res.Status != events.StateCanceled {
		// Not applied (the workflow had already ended): withdraw the record.
		if cerr := o.clearCancel(ctx, p.Tenant, p.Last); cerr != nil {
			o.log.Warn("withdrawing a cancel that did not apply", "workflow", p.Last, "err", cerr)
		}
	}
	if isNotFound(err) {
		_ = o.clearCancel(ctx, p.Tenant, p.Last)
		return res, fmt.Errorf("%w: %s", ErrNoWorkflow, p.Last)
	}
	return res, err
}

func (o *Orchestrator) recordCancel(ctx context.Context, tenant, workflow, reason string) error {
	key, err := subjects.CheckpointKey(tenant, workflow)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(events.ControlRecord{Canceled: true, Reason: reason, At: time.Now().UTC()})
	_, err = o.controls.Put(ctx, key, b)
	return err
}

func (o *Orchestrator) clearCancel(ctx context.Context, tenant, workflow string) error {
	key, err := subjects.CheckpointKey(tenant, workflow)
	if err != nil {
		return err
	}
	if err := o.controls.Delete(ctx, key); err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

func (o *Orchestrator) cancel(cp *Checkpoint, c events.Control, res *events.ControlResult) error {
	if cp.Status.Terminal() {
		res.Message = fmt.Sprintf("workflow already %s", cp.Status)
		return nil
	}
	reason := c.Reason
	if reason == "" {
		reason = "canceled on request"
	}
	for _, t := range cp.Tasks {
		if !t.Status.Terminal() {
			t.Status = events.StateCanceled
		}
	}
	cp.Status, cp.Phase, cp.Canceled = events.StateCanceled, PhaseDone, reason
	res.Applied, res.Message = true, "canceled"
	if err := cp.emit(events.TypeStatus, "", events.Status{State: events.StateCanceled, Message: reason}); err != nil {
		return err
	}
	return cp.emit(events.TypeCancelled, "", events.Cancelled{Reason: reason})
}

// resume restarts a failed workflow: failed tasks are dispatched again,
// completed ones keep their outputs and are never re-run.
func (o *Orchestrator) resume(cp *Checkpoint, res *events.ControlResult) error {
	if cp.Status != events.StateFailed {
		res.Message = fmt.Sprintf("only a failed workflow can be resumed; this one is %s", cp.Status)
		return nil
	}
	if len(cp.Stages) == 0 {
		res.Message = "the workflow failed before it had a valid plan; submit a corrected one"
		return nil
	}
	n := 0
	for _, t := range cp.Tasks {
		if t.Status == events.StateFailed || t.Status == events.StateWorking || t.Status == events.StateCanceled {
			t.Status, t.Error, t.CompletedAt = events.StateSubmitted, "", nil
			n++
		}
	}
	cp.Status, cp.Error, cp.Deadline = events.StateWorking, nil, nil
	cp.ResumeCount++
	// The watchdog's timer ended with the failure: a new one watches the
	// steps that run again.
	if err := o.armWatch(cp); err != nil {
		return err
	}
	res.Applied, res.Message = true, fmt.Sprintf("resumed: %d steps run again", n)
	if err := cp.emit(events.TypeStatus, "", events.Status{State: events.StateWorking,
		Message: fmt.Sprintf("resumed (resume %d): %d steps run again, completed steps kept", cp.ResumeCount, n)}); err != nil {
		return err
	}
	return o.advance(cp)
}

// decide applies an approval decision to the step(s) awaiting one.
func (o *Orchestrator) decide(cp *Checkpoint, c events.Control, res *events.ControlResult) error {
	if cp.Status.Terminal() {
		res.Message = fmt.Sprintf("workflow already %s", cp.Status)
		return nil
	}
	var decided []string
	for _, s := range cp.Plan.Steps {
		t := cp.Tasks[s.ID]
		if t.Approval == nil || t.Approval.State != ApprovalPending || (c.StepID != "" && c.StepID != s.ID) {
			continue
		}
		decided = append(decided, s.ID)
		t.Approval.Comment = c.Reason
		if c.Action == events.ActionReject {
			t.Approval.State, t.Status = ApprovalRejected, events.StateRejected
			continue
		}
		t.Approval.State, t.Status = ApprovalApproved, events.StateCompleted
		if err := cp.emit(events.TypeStatus, s.ID, events.Status{State: events.StateCompleted, StepID: s.ID, Message: "approved: " + c.Reason}); err != nil {
			return err
		}
	}
	if len(decided) == 0 {
		res.Message = "no step awaits a decision"
		if c.StepID != "" {
			res.Message = fmt.Sprintf("step %q does not await a decision", c.StepID)
		}
		return nil
	}
	res.Applied = true
	if c.Action == events.ActionReject {
		res.Message = fmt.Sprintf("rejected %v", decided)
		cp.Status, cp.Phase = events.StateRejected, PhaseDone
		if err := cp.emit(events.TypeStatus, "", events.Status{State: events.StateRejected, Message: "rejected: " + c.Reason}); err != nil {
			return err
		}
		e := events.Error{Code: events.CodeRejected, StepID: decided[0], Message: fmt.Sprintf("step %s rejected: %s", decided[0], c.Reason)}
		cp.Error = &e
		return cp.emit(events.TypeError, decided[0], e)
	}
	res.Message = fmt.Sprintf("approved %v", decided)
	return o.advance(cp)
}
