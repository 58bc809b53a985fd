package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// handleReply records a step's result and moves the workflow on.
func (o *Orchestrator) handleReply(ctx context.Context, d *bus.Delivery) (err error) {
	p, err := subjects.Parse(d.Subject)
	if err != nil || p.Kind != "reply" {
		return fmt.Errorf("%w: reply on %q", bus.ErrPoison, d.Subject)
	}
	env := d.Envelope
	if env.TenantID != p.Tenant {
		return fmt.Errorf("%w: ce-tenantid %q differs from the subject's tenant %q", bus.ErrPoison, env.TenantID, p.Tenant)
	}
	ctx, span := o.startReply(ctx, d, p.Tenant, p.Last)
	defer func() { endSpan(span, err) }()
	var apply func(cp *Checkpoint) error
	switch env.Type {
	case events.TypeStepCompleted:
		var r events.StepCompleted
		if err := env.Unmarshal(&r); err != nil {
			return fmt.Errorf("%w: %w", bus.ErrPoison, err)
		}
		apply = func(cp *Checkpoint) error { return o.completed(cp, r) }
	case events.TypeStepFailed:
		var r events.StepFailed
		if err := env.Unmarshal(&r); err != nil {
			return fmt.Errorf("%w: %w", bus.ErrPoison, err)
		}
		apply = func(cp *Checkpoint) error { return o.failed(cp, r) }
	case events.TypeDeadline:
		var dl events.Deadline
		if err := env.Unmarshal(&dl); err != nil {
			return fmt.Errorf("%w: %w", bus.ErrPoison, err)
		}
		if wait := time.Until(dl.At); wait > 0 {
			return &bus.RetryAfter{Delay: wait}
		}
		return o.expire(ctx, p.Tenant, p.Last)
	default:
		return fmt.Errorf("%w: %s on a reply subject", bus.ErrPoison, env.Type)
	}
	err = o.transition(ctx, p.Tenant, p.Last, apply)
	if err != nil && isNotFound(err) {
		if d.Delivered < unknownReplyTries {
			// Looked up again a little later before it is given up: a
			// reply terminated here is a step run again.
			return &bus.RetryAfter{Delay: time.Second}
		}
		return fmt.Errorf("%w: reply for unknown workflow %s (after %d deliveries)", bus.ErrPoison, p.Last, d.Delivered)
	}
	return err
}

// unknownReplyTries is how many deliveries a reply for a workflow with no
// checkpoint gets before it is terminated.
const unknownReplyTries = 3

// current reports whether a reply answers the task's live attempt, or an
// earlier one the watchdog gave up as lost (since the task's last dispatch
// by the plan): whichever comes first is recorded, and every later one
// finds the task no longer working.
func current(cp *Checkpoint, step string, attempt int) (*Task, bool) {
	t, ok := cp.Tasks[step]
	if !ok || cp.Status.Terminal() || t.Status != events.StateWorking {
		return nil, false // late, duplicate or foreign: recorded once
	}
	since := t.Since
	if since == 0 || since > t.Attempt { // a checkpoint from before Since
		since = t.Attempt
	}
	if attempt < since || attempt > t.Attempt {
		return nil, false // stale: a run the plan has moved past
	}
	return t, true
}

// StepArtifactID is the artifact id of a step's output: "<step>.output".
func StepArtifactID(step string) string { return step + ".output" }

// stepArtifact is a completed step's output as an artifact event, so that
// a client following the workflow has every step's result as it comes,
// not only all of them in the final complete event. It precedes the
// step's completed status.
func stepArtifact(r events.StepCompleted) events.Artifact {
	out := r.Output
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	return events.Artifact{ArtifactID: StepArtifactID(r.StepID), StepID: r.StepID, Name: r.Capability + " output",
		Data: out, LastChunk: true}
}

func (o *Orchestrator) completed(cp *Checkpoint, r events.StepCompleted) error {
	t, ok := current(cp, r.StepID, r.Attempt)
	if !ok {
		return errNoChange
	}
	now := time.Now().UTC()
	t.Status, t.Output, t.Worker, t.CompletedAt = events.StateCompleted, r.Output, r.Worker, &now
	t.QueuedMS, t.RunMS = r.QueuedMS, r.DurationMS
	cp.measure(now, false)
	cp.ExecutionOrder = append(cp.ExecutionOrder, r.StepID)
	if err := cp.emit(events.TypeArtifact, r.StepID, stepArtifact(r)); err != nil {
		return err
	}
	if s, _ := cp.planStep(r.StepID); s.RequiresApproval {
		if err := o.review(cp, r.StepID, t); err != nil {
			return err
		}
	} else if err := cp.emit(events.TypeStatus, r.StepID, events.Status{State: events.StateCompleted, StepID: r.StepID, Message: "completed on " + r.Worker}); err != nil {
		return err
	}
	if err := o.progress(cp, r.StepID); err != nil {
		return err
	}
	return o.advance(cp)
}

// review holds a completed step for a human decision unless its output's
// confidence clears the threshold.
func (o *Orchestrator) review(cp *Checkpoint, step string, t *Task) error {
	var out struct {
		Confidence *float64 `json:"confidence"`
	}
	_ = json.Unmarshal(t.Output, &out)
	if out.Confidence != nil && *out.Confidence >= o.cfg.ApprovalThreshold {
		t.Approval = &Approval{State: ApprovalAuto, Confidence: out.Confidence}
		return cp.emit(events.TypeStatus, step, events.Status{State: events.StateCompleted, StepID: step,
			Message: fmt.Sprintf("auto-approved: confidence %.2f >= %.2f", *out.Confidence, o.cfg.ApprovalThreshold)})
	}
	t.Approval = &Approval{State: ApprovalPending, Confidence: out.Confidence}
	t.Status = events.StateInputRequired
	why := "no confidence reported"
	if out.Confidence != nil {
		why = fmt.Sprintf("confidence %.2f < %.2f", *out.Confidence, o.cfg.ApprovalThreshold)
	}
	return cp.emit(events.TypeStatus, step, events.Status{State: events.StateInputRequired, StepID: step,
		Message: fmt.Sprintf("step %s awaits approval (%s): approve or reject it with POST /v1/workflows/%s/approve", step, why, cp.WorkflowID)})
}

func (o *Orchestrator) progress(cp *Checkpoint, step string) error {
	done, total := 0, len(cp.Tasks)
	for id := range cp.Tasks {
		if cp.settled(id) {
			done++
		}
	}
	return cp.emit(events.TypeProgress, step, events.Progress{
		CompletedSteps: done, TotalSteps: total, Percent: 100 * float64(done) / float64(total), StepID: step,
		Message: fmt.Sprintf("step %s done (%d/%d)", step, done, total),
	})
}

func (o *Orchestrator) failed(cp *Checkpoint, r events.StepFailed) error {
	t, ok := current(cp, r.StepID, r.Attempt)
	if !ok || r.Attempt != t.Attempt {
		// A failure of an attempt given up as lost does not fail the step:
		// the attempt dispatched after it is running and will answer.
		return errNoChange
	}
	s, _ := cp.planStep(r.StepID)
	now := time.Now().UTC()
	if s.Fallback != "" && t.FellBack == "" {
		if err := cp.emit(events.TypeStatus, r.StepID, events.Status{State: events.StateWorking, StepID: r.StepID,
			Message: fmt.Sprintf("%s failed (%s); falling back to %s", t.Capability, r.Error, s.Fallback)}); err != nil {
			return err
		}
		t.FellBack, t.Capability, t.Status, t.Error = s.Fallback, s.Fallback, events.StateSubmitted, r.Error
		return o.advance(cp)
	}
	t.Status, t.Error, t.Worker, t.CompletedAt = events.StateFailed, r.Error, r.Worker, &now
	t.QueuedMS, t.RunMS = r.QueuedMS, r.DurationMS
	cp.measure(now, false)
	cp.ExecutionOrder = append(cp.ExecutionOrder, r.StepID)
	if s.Optional {
		if err := cp.emit(events.TypeStatus, r.StepID, events.Status{State: events.StateFailed, StepID: r.StepID,
			Message: "optional step failed, continuing without it: " + r.Error}); err != nil {
			return err
		}
		if err := o.progress(cp, r.StepID); err != nil {
			return err
		}
		return o.advance(cp)
	}
	if err := cp.emit(events.TypeStatus, r.StepID, events.Status{State: events.StateFailed, StepID: r.StepID, Message: r.Error}); err != nil {
		return err
	}
	return cp.fail(events.Error{Code: events.CodeStepFailed, StepID: r.StepID,
		Message: fmt.Sprintf("step %q (%s) failed: %s", r.StepID, r.Capability, r.Error)})
}
