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

// handleTimer holds a timer until it is due, then expires the workflow,
// ends a wait step's wait, or runs its watchdog.
func (o *Orchestrator) handleTimer(ctx context.Context, d *bus.Delivery) error {
	env := d.Envelope
	if env.Type != events.TypeDeadline {
		return fmt.Errorf("%w: %s on a timer subject", bus.ErrPoison, env.Type)
	}
	if subj, err := subjects.Timer(env.TenantID, env.WorkflowID); err != nil || subj != d.Subject {
		return fmt.Errorf("%w: timer on %q names tenant %q and workflow %q", bus.ErrPoison, d.Subject, env.TenantID, env.WorkflowID)
	}
	var tm workflow.Timer
	if err := env.Unmarshal(&tm); err != nil {
		return fmt.Errorf("%w: %w", bus.ErrPoison, err)
	}
	if wait := time.Until(tm.At); wait > 0 {
		return &bus.RetryAfter{Delay: wait}
	}
	if tm.Step != "" {
		// A wait step's end or its signal's timeout (workflow.WaitTimer).
		_, err := o.apply(ctx, env.TenantID, env.WorkflowID, workflow.WaitDue{StepID: tm.Step, Attempt: tm.Attempt})
		if isNotFound(err) || errors.Is(err, workflow.ErrIllegal) {
			return nil // purged, or a timer for a step the workflow does not wait on
		}
		return err
	}
	if tm.Watch == 0 {
		return o.expire(ctx, env.TenantID, env.WorkflowID)
	}
	if o.cfg.StepLease <= 0 {
		return nil // the watchdog was turned off since this timer was armed
	}
	return o.watch(ctx, env.TenantID, env.WorkflowID, tm.Watch)
}

// sendTimer publishes a timer outside any transition: the watchdog
// scheduling its next round, or the scan re-arming a timer the server lost.
func (o *Orchestrator) sendTimer(ctx context.Context, cp *workflow.Checkpoint, m workflow.Outgoing) error {
	_, err := o.bus.PublishAll(ctx, envelopes(cp, []workflow.Outgoing{m}))
	return err
}

// hasTimer reports whether a timer is stored: for a deadline, its message;
// for the watchdog, any schedule on the workflow's watch subject.
func (o *Orchestrator) hasTimer(ctx context.Context, m workflow.Outgoing) (bool, error) {
	match := func(id string) bool { return id == m.MsgID }
	if m.Target != "" {
		match = func(string) bool { return true }
	}
	found, complete, err := o.bus.FindMsgID(ctx, subjects.StreamTimers, m.Subject, match, searchLimit)
	return found || !complete, err
}
