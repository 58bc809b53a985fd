package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	wf "github.com/agentbus/agentbus/workflow"
)

// Recovering a step whose request a consumer holds and never hands out
// again. While its request is stored a step is alive to the watchdog
// (lease.go): queued, running, or about to be redelivered. After a node's
// SIGKILL a clustered consumer has been seen to hold a request as
// delivered and unacknowledged and never redeliver it (ack pending 1,
// redelivered 0, for minutes; nats-server issue 6905 looks the same); the
// step then never ends. From the outside that state looks like a long
// step whose worker sends in-progress acks, so the recovery goes in two
// stages, the first harmless to a live step and the second only once no
// live run can still be going:
//
//  1. A working step whose lease is due, whose request is stored and which
//     its consumer holds (delivered, not acked) is noted (Task.HeldSince).
//     Held for three of the consumer's AckWaits since (or a lease, if
//     that is less), its consumer's
//     leader is stepped down: another replica takes over and rebuilds the
//     pending state from the replicated log, so a request the old leader
//     sat on is redelivered after AckWait, and a live run's acks go to the
//     new leader unharmed (Task.SteppedDownAt; a status event with
//     recovery "stepdown").
//  2. Still held StepHold after the stepdown — longer than any live run
//     can last (the step's timeout, or the workers' StepTimeout, with its
//     retries) — the attempt is given up: its request is deleted so it
//     can never be delivered again, and the step is dispatched as a new
//     attempt whose Since is itself, so that a reply of the old attempt,
//     should one come after all, never completes it (attempt fencing; a
//     status event with recovery "redispatch").
//
// Each stage is one checkpoint transition, logged and counted
// (agentbus_orchestrator_recoveries_total{kind}).

// stepDownAfter is how many of a consumer's AckWaits a request may be held
// since first seen held before its consumer's leader is stepped down.
const stepDownAfter = 3

// recoverHeld takes the next recovery stage for a working step whose lease
// is due and whose request is still stored, if its consumer holds it. It
// returns how soon the watchdog should look at the step again (0: at its
// next lease).
func (o *Orchestrator) recoverHeld(ctx context.Context, cp *wf.Checkpoint, step string, now time.Time) (time.Duration, error) {
	t := cp.Tasks[step]
	if t.StepSeq == 0 {
		return 0, nil // where the request is stored is not known
	}
	name, err := subjects.StepConsumer(t.Capability)
	if err != nil {
		return 0, err
	}
	h, err := o.bus.ConsumerHolds(ctx, subjects.StreamSteps, name, t.StepSeq)
	if isNotFound(err) {
		return 0, nil // no worker has bound to it: queued until one does
	}
	if err != nil {
		return 0, err
	}
	if h.Holding != bus.Held {
		return 0, nil // queued behind others, or acked with its reply on its way
	}
	log := o.log.With("tenant", cp.TenantID, "workflow", cp.WorkflowID, "step", step, "attempt", t.Attempt,
		"consumer", name, "leader", h.Leader, "ack_pending", h.AckPending, "redelivered", h.Redelivered,
		"delivered", h.Delivered, "ack_floor", h.AckFloor, "request_seq", t.StepSeq)
	// Held for a lease or three AckWaits, whichever is less (the same by
	// default: StepLease is three of the workers' default AckWait).
	wait := max(min(stepDownAfter*h.AckWait, o.cfg.StepLease), time.Second)
	switch {
	case t.HeldSince == nil || t.HeldSince.After(now):
		log.Info("step lease due: its request is held by its consumer, delivered and not acknowledged")
		_, err := o.apply(ctx, cp.TenantID, cp.WorkflowID, wf.Held{StepID: step, Attempt: t.Attempt})
		if isNotFound(err) {
			err = nil
		}
		return wait, err
	case t.SteppedDownAt == nil:
		if held := now.Sub(*t.HeldSince); held < wait {
			return wait - held, nil
		}
		err := o.bus.StepDownConsumer(ctx, subjects.StreamSteps, name)
		how := "stepped its leader " + h.Leader + " down (it rebuilds its pending state and redelivers what it held)"
		switch {
		case errors.Is(err, bus.ErrNotClustered):
			how = "its server is not clustered, so no leader to step down"
		case err != nil:
			how = "stepping its leader down failed: " + err.Error()
		}
		log.Warn("recovery: step request held without redelivery; consumer leader stepdown", "held_for", now.Sub(*t.HeldSince).Round(time.Millisecond), "outcome", how)
		msg := fmt.Sprintf("recovery: step %s attempt %d: consumer %s has held its request, delivered and not acknowledged, since %s: %s",
			step, t.Attempt, name, t.HeldSince.Format(time.RFC3339), how)
		return o.stepHold(cp, step, h.AckWait), o.recovered(ctx, cp, events.RecoveryStepDown, wf.SteppedDown{StepID: step, Attempt: t.Attempt, Message: msg})
	}
	hold := o.stepHold(cp, step, h.AckWait)
	if since := now.Sub(*t.SteppedDownAt); since < hold {
		return hold - since, nil
	}
	// No live run can still hold it: the request goes, so that it can
	// never be delivered again, and the step runs as a new attempt.
	key := events.StepKey(cp.TenantID, cp.WorkflowID, step, t.Attempt)
	if err := o.bus.DeleteStored(ctx, subjects.StreamSteps, t.StepSeq, key); err != nil {
		return 0, err
	}
	log.Warn("recovery: step request still held after the stepdown: deleted and dispatched again as a new attempt", "held_since", t.HeldSince)
	msg := fmt.Sprintf("recovery: step %s attempt %d: its request was still held by consumer %s %s after the stepdown: deleted, and dispatched again as attempt %d (replies of attempt %d no longer count)",
		step, t.Attempt, name, hold, t.Attempt+1, t.Attempt)
	return 0, o.recovered(ctx, cp, events.RecoveryRedispatch, wf.Abandoned{StepID: step, Attempt: t.Attempt, Message: msg})
}

// stepHold is how long a step's request may stay held after its
// consumer's leader was stepped down before the attempt is given up: past
// the longest a live run can hold it. A step with its own timeout is
// bounded by it (plus a reply's retries and the in-progress acks' slack);
// any other by Config.StepHold.
func (o *Orchestrator) stepHold(cp *wf.Checkpoint, step string, ackWait time.Duration) time.Duration {
	if s, ok := cp.PlanStep(step); ok && s.TimeoutMS > 0 {
		return min(time.Duration(s.TimeoutMS)*time.Millisecond+30*time.Second+stepDownAfter*ackWait, o.cfg.StepHold)
	}
	return o.cfg.StepHold
}

// recovered applies a recovery to a step attempt that is still the live
// one (the engine says what was done in a status event), and counts it.
func (o *Orchestrator) recovered(ctx context.Context, cp *wf.Checkpoint, kind string, in wf.Input) error {
	a, err := o.apply(ctx, cp.TenantID, cp.WorkflowID, in)
	if isNotFound(err) {
		return nil
	}
	if err == nil && len(a.Outbox) > 0 {
		o.cfg.Metrics.recovered(kind)
	}
	return err
}
