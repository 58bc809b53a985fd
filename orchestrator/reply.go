package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
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
	var in workflow.Input
	switch env.Type {
	case events.TypeStepCompleted:
		var r events.StepCompleted
		if err := env.Unmarshal(&r); err != nil {
			return fmt.Errorf("%w: %w", bus.ErrPoison, err)
		}
		in = workflow.Completed{StepCompleted: r}
	case events.TypeStepFailed:
		var r events.StepFailed
		if err := env.Unmarshal(&r); err != nil {
			return fmt.Errorf("%w: %w", bus.ErrPoison, err)
		}
		in = workflow.Failed{StepFailed: r}
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
	_, err = o.apply(ctx, p.Tenant, p.Last, in)
	switch {
	case errors.Is(err, workflow.ErrIllegal):
		// A step the plan lacks or an attempt never dispatched, judged on
		// the leader's checkpoint: no orchestrator sent this request.
		return fmt.Errorf("%w: %w", bus.ErrPoison, err)
	case err != nil && isNotFound(err):
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
