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

// timer is the data of a durable timer, an events.TypeDeadline message on
// the workflow's timer subject (subjects.Timer). Without Watch it is the
// workflow's deadline, which the timer consumer naks with a delay until it
// is due. With Watch it is the workflow's Watch-th watchdog timer
// (lease.go): a message schedule on its watch subject (subjects.Watch)
// that the server holds and fires onto the timer subject when it is due,
// and that the watchdog schedules again for the next lease due. Every
// workflow has a watchdog timer while it runs; scheduled, they cost the
// server nothing while they wait, where as many timers waiting on the
// consumer would have it review them all on every nak.
type timer struct {
	At    time.Time `json:"at"`
	Watch int       `json:"watch,omitempty"`
}

// deadlineTimer is the timer that fails the workflow at its deadline.
func deadlineTimer(cp *Checkpoint, at time.Time) (Outgoing, error) {
	return newTimer(cp, cp.TenantID+"/"+cp.WorkflowID+"/deadline", timer{At: at})
}

// watchTimer schedules the workflow's watchdog timer number n at at.
func watchTimer(cp *Checkpoint, n int, at time.Time) (Outgoing, error) {
	at = at.UTC()
	m, err := newTimer(cp, fmt.Sprintf("%s/%s/watch/%d/%d", cp.TenantID, cp.WorkflowID, n, at.UnixMilli()), timer{At: at, Watch: n})
	if err != nil {
		return m, err
	}
	if m.Subject, err = subjects.Watch(cp.TenantID, cp.WorkflowID); err != nil {
		return m, err
	}
	m.Target, _ = subjects.Timer(cp.TenantID, cp.WorkflowID)
	m.At = &at
	return m, nil
}

// armWatch queues a new watchdog timer for the workflow, due a lease from
// now, unless the watchdog is off.
func (o *Orchestrator) armWatch(cp *Checkpoint) error {
	if o.cfg.StepLease <= 0 {
		return nil
	}
	cp.Watch++
	m, err := watchTimer(cp, cp.Watch, time.Now().Add(o.cfg.StepLease))
	if err != nil {
		return err
	}
	cp.Outbox = append(cp.Outbox, m)
	return nil
}

func newTimer(cp *Checkpoint, msgID string, tm timer) (Outgoing, error) {
	subj, err := subjects.Timer(cp.TenantID, cp.WorkflowID)
	if err != nil {
		return Outgoing{}, err
	}
	data, err := json.Marshal(tm)
	if err != nil {
		return Outgoing{}, err
	}
	return Outgoing{Subject: subj, MsgID: msgID, Type: events.TypeDeadline, Time: time.Now().UTC(), Data: data}, nil
}

// handleTimer holds a timer until it is due, then expires the workflow or
// runs its watchdog.
func (o *Orchestrator) handleTimer(ctx context.Context, d *bus.Delivery) error {
	env := d.Envelope
	if env.Type != events.TypeDeadline {
		return fmt.Errorf("%w: %s on a timer subject", bus.ErrPoison, env.Type)
	}
	if subj, err := subjects.Timer(env.TenantID, env.WorkflowID); err != nil || subj != d.Subject {
		return fmt.Errorf("%w: timer on %q names tenant %q and workflow %q", bus.ErrPoison, d.Subject, env.TenantID, env.WorkflowID)
	}
	var tm timer
	if err := env.Unmarshal(&tm); err != nil {
		return fmt.Errorf("%w: %w", bus.ErrPoison, err)
	}
	if wait := time.Until(tm.At); wait > 0 {
		return &bus.RetryAfter{Delay: wait}
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
func (o *Orchestrator) sendTimer(ctx context.Context, cp *Checkpoint, m Outgoing) error {
	_, err := o.bus.PublishAll(ctx, envelopes(cp, []Outgoing{m}))
	return err
}

// hasTimer reports whether a timer is stored: for a deadline, its message;
// for the watchdog, any schedule on the workflow's watch subject.
func (o *Orchestrator) hasTimer(ctx context.Context, m Outgoing) (bool, error) {
	match := func(id string) bool { return id == m.MsgID }
	if m.Target != "" {
		match = func(string) bool { return true }
	}
	found, complete, err := o.bus.FindMsgID(ctx, subjects.StreamTimers, m.Subject, match, searchLimit)
	return found || !complete, err
}
