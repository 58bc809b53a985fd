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
	ctx, span := o.startReply(ctx, d.Subject, env, p.Tenant, p.Last, d.Delivered)
	defer func() { endSpan(span, err) }()
	if env.Type == events.TypeDeadline {
		var dl events.Deadline
		if err := env.Unmarshal(&dl); err != nil {
			return fmt.Errorf("%w: %w", bus.ErrPoison, err)
		}
		if wait := time.Until(dl.At); wait > 0 {
			return &bus.RetryAfter{Delay: wait}
		}
		return o.expire(ctx, p.Tenant, p.Last)
	}
	in, err := answer(env)
	if err != nil {
		return fmt.Errorf("%w: %w", bus.ErrPoison, err)
	}
	_, err = o.transition(ctx, p.Tenant, p.Last, in)
	switch {
	case errors.Is(err, workflow.ErrStale):
		// Recorded already, handed over: its worker got no verdict, so a
		// step handed back with one was never taken (eager.go).
		return o.reclaim(ctx, p.Tenant, p.Last, env.ID)
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

// handleResult records a step's result that a worker handed straight to
// this orchestrator (bus.Hand) and moves the workflow on, as handleReply
// does with one from the replies stream. Any error sends the worker the
// durable way, so nothing is judged here: not a poison, not an unknown
// workflow. An answer taken here and then sent the durable way too, because
// the worker stopped waiting, is recorded once: the second finds its
// attempt already answered.
func (o *Orchestrator) handleResult(ctx context.Context, m bus.Handed) (_ *events.Envelope, err error) {
	subject, env := m.Subject, m.Env
	p, err := subjects.Parse(subject)
	if err != nil || p.Kind != "result" {
		return nil, fmt.Errorf("not a result subject: %q", subject)
	}
	if env.TenantID != p.Tenant {
		return nil, fmt.Errorf("ce-tenantid %q differs from the subject's tenant %q", env.TenantID, p.Tenant)
	}
	ctx, span := o.startReply(ctx, subject, env, p.Tenant, p.Last, 1)
	defer func() { endSpan(span, err) }()
	in, err := answer(env)
	if err != nil {
		return nil, err
	}
	// +OK (nil) only once the transition's outbox is published too: an
	// orchestrator that dies before (or cannot publish) leaves the worker
	// without a verdict, and it sends the answer through the replies
	// stream, whose delivery publishes the stored outbox (transition). Were
	// the worker told as soon as the checkpoint is stored, it would ack
	// its step, and the outbox would wait for the checkpoint scan, a step
	// lease later. Answering early bought 8 – 14 % at 64 in flight on an
	// R3 cluster (the worker's slot is held through the replicated
	// publish), nothing measurable on one server.
	a, err := o.transitionOffer(ctx, p.Tenant, p.Last, in, o.offered(m))
	if errors.Is(err, workflow.ErrStale) {
		return nil, nil
	}
	return a.Handed, err
}

// answer reads a step's answer: its result or its failure.
func answer(env events.Envelope) (workflow.Input, error) {
	switch env.Type {
	case events.TypeStepCompleted:
		var r events.StepCompleted
		if err := env.Unmarshal(&r); err != nil {
			return nil, err
		}
		return workflow.Completed{StepCompleted: r}, nil
	case events.TypeStepFailed:
		var r events.StepFailed
		if err := env.Unmarshal(&r); err != nil {
			return nil, err
		}
		return workflow.Failed{StepFailed: r}, nil
	case events.TypeStepRunning:
		var r events.StepRunning
		if err := env.Unmarshal(&r); err != nil {
			return nil, err
		}
		return workflow.Running{StepID: r.StepID, Attempt: r.Attempt}, nil
	}
	return nil, fmt.Errorf("%s is not a step's answer", env.Type)
}

// unknownReplyTries is how many deliveries a reply for a workflow with no
// checkpoint gets before it is terminated.
const unknownReplyTries = 3
