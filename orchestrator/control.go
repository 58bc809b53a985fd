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
	"github.com/agentbus/agentbus/workflow"
)

// ControlQueue is the queue group orchestrators share on control subjects:
// one of them applies each control message. Workers subscribe without a
// queue, so every worker sees every cancel.
const ControlQueue = "orchestrators"

// ResultQueue is the queue group in which orchestrators take the results
// workers hand them (subjects.Result): one of them gets each.
const ResultQueue = "orchestrators"

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
		// A store that did not answer in time, or this orchestrator
		// stopping under the request (its context canceled: SIGTERM in
		// `make chaos` answered an approve 502), is no answer on the
		// workflow: the client may try again (503), and another
		// orchestrator takes it.
		unavailable := bus.Transient(err) || errors.Is(err, bus.ErrConflict) ||
			errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
		b, _ := json.Marshal(events.ControlAnswer{Error: err.Error(), Unavailable: unavailable})
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
		cp, err := o.Checkpoint(ctx, p.Tenant, p.Last)
		if err == nil && cp.Status == events.StateFailed {
			if err := o.clearCancel(ctx, p.Tenant, p.Last); err != nil {
				return res, err
			}
		}
		if err == nil && cp.Status.Terminal() && cp.Concurrency != nil {
			// The workflow gave its concurrency key's slot up when it
			// ended: a resume takes it again, or is refused while the key
			// is full (it cannot wait in the key's queue once resumed).
			busy, err := o.retake(ctx, cp)
			if err != nil {
				return res, err
			}
			if busy != "" {
				res.Status, res.Message = cp.Status, busy
				return res, nil
			}
			defer func() {
				if !res.Applied {
					o.freeKey(ctx, cp)
				}
			}()
		}
	}
	var in workflow.Input
	switch c.Action {
	case events.ActionCancel:
		in = workflow.Cancel{Reason: c.Reason}
	case events.ActionResume:
		in = workflow.Resume{}
	case events.ActionApprove:
		in = workflow.Approve{StepID: c.StepID, Comment: c.Reason}
	case events.ActionReject:
		in = workflow.Reject{StepID: c.StepID, Comment: c.Reason}
	case events.ActionSignal:
		in = workflow.Signal{Name: c.Signal, Data: c.Data, ID: n.Envelope.ID}
	case events.ActionPause:
		in = workflow.Pause{Reason: c.Reason}
	case events.ActionUnpause:
		in = workflow.Unpause{Reason: c.Reason}
	default:
		return res, fmt.Errorf("unknown action %q", c.Action)
	}
	a, err := o.transition(ctx, p.Tenant, p.Last, in)
	res.Status, res.Applied, res.Message = a.Status, err == nil, a.Message
	var refused *workflow.IllegalError
	if errors.As(err, &refused) {
		// Not for this state (already ended, nothing awaits a decision):
		// answered, not an error.
		res.Message, err = refused.Reason, nil
	}
	if c.Action == events.ActionSignal && errors.Is(err, workflow.ErrStale) {
		// The same signal again (a request retried with its ce-id): it
		// was applied the first time.
		res.Applied, res.Message, err = true, fmt.Sprintf("signal %q was received already", c.Signal), nil
	}
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
