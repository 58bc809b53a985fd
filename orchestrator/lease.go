package orchestrator

import (
	"context"
	"slices"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	wf "github.com/agentbus/agentbus/workflow"
)

// The step watchdog. Every dispatched step attempt has a lease: StepLease
// from its dispatch (Task.DispatchedAt). One durable timer per workflow
// (timer.go: a message schedule, armed with the first dispatch and again
// at a resume) comes due at the earliest lease of its working steps; the
// watchdog then asks the streams whether each step whose lease is due
// shows a sign of life, dispatches again as its next attempt every one
// that shows none, and schedules the timer for the next lease due. The
// timer ends with the workflow. One timer per workflow rather than per
// step, because every timer is stored, fired, delivered and acked: per
// step that would add half again to the server's work for an echo step;
// shared by a workflow's steps, each keeping its own lease, it is lost in
// the noise (BenchmarkStepLease).
//
// How it learns that a step is alive: from the streams themselves.
// AGENTBUS_STEPS is a work-queue stream, and a worker acks (removes) a
// request only after it has published the reply; while it runs the step it
// sends in-progress acks, and if it dies JetStream hands the request to
// another worker after AckWait. So while the request is stored the step is
// queued, running or about to be retried — alive however long it takes,
// and whoever holds it. Once the request is gone the reply was published,
// and it stays in AGENTBUS_REPLIES until an orchestrator has recorded it
// (the reply consumer acks after the checkpoint write). A step still
// working in its checkpoint with neither stored lost one of them: the
// server acknowledged a message and lost it (killed before it flushed).
// Workers' progress events would not do: they are optional (an agent in
// another language may send none) and prove that a step ran, not that it
// will answer. A heartbeat would have every worker, in any language, speak
// one more protocol; the step consumer's state counts messages and names
// none. Two reads answer the question: the request by the sequence its
// publish was acknowledged with (Task.StepSeq; the message id is compared,
// since a server that lost a message may give its sequence to another),
// and the few messages on the workflow's own reply subject.
//
// The order of the reads makes a verdict of "lost" safe: the request first,
// then the replies, then the checkpoint, written with a revision check. A
// request found gone was acked, so its reply (if any) was published
// before; it is then either still in the replies stream at the second read
// or already recorded by a checkpoint revision that the third step sees
// (or conflicts with). An answered step is never dispatched again, and if
// a reply of an attempt given up as lost comes after all, current
// (reply.go) records the first answer and ignores the rest.

// searchLimit bounds the messages read on one subject by one search.
const searchLimit = 256

// verdict is what the watchdog concludes about a step attempt.
type verdict int

const (
	// settled: the attempt is no longer the task's live one.
	settled verdict = iota
	// alive: its request or its reply is stored.
	alive
	// unsent: the checkpoint's outbox is not yet published.
	unsent
	// lost: neither its request nor a reply is stored.
	lost
)

// watch runs when a workflow's watchdog timer number n is due: it examines
// every working step whose lease is due, dispatches again the lost ones,
// and schedules the timer again for the next lease due. It lets the timer
// end once the workflow has ended or a newer timer watches it.
func (o *Orchestrator) watch(ctx context.Context, tenant, workflow string, n int) error {
	cp, _, err := o.load(ctx, tenant, workflow)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cp.Status.Terminal() || cp.Watch != n {
		return nil
	}
	if len(cp.Outbox) > 0 {
		// An earlier transition stored its decisions but has not published
		// them (its process died and its trigger went missing): finish it.
		if err := o.settle(ctx, tenant, workflow); err != nil {
			return err
		}
		return o.rearm(ctx, cp, n, time.Now().Add(wf.FirstLook(o.cfg.StepLease)))
	}
	now := time.Now()
	next := o.cfg.StepLease
	for _, id := range working(cp) {
		t := cp.Tasks[id]
		if due, ok := o.leaseDue(t); ok && due.After(now) {
			next = min(next, due.Sub(now))
			continue
		}
		v, err := o.examine(ctx, cp, id, t.Attempt)
		if err != nil {
			return err
		}
		if v == alive {
			// A long step, or one its consumer holds and never hands out
			// again (a server's state after a failover): recover.go.
			again, err := o.recoverHeld(ctx, cp, id, now)
			if err != nil {
				return err
			}
			if again > 0 {
				next = min(next, again)
			}
		}
		if v == lost {
			if err := o.redispatch(ctx, tenant, workflow, id, t.Attempt); err != nil {
				return err
			}
		}
	}
	return o.rearm(ctx, cp, n, now.Add(next))
}

// leaseDue is when a working step's lease ends; false if it has no
// dispatch time. The lease is StepLease from its dispatch, but for a step
// handed back with a verdict (eager.go): the lease its worker's offer
// named (Task.HandedLeaseMS, its AckWait) from the worker's last word,
// and from this orchestrator's start at the earliest. A handed step is
// found alive only by its worker's words, and after every orchestrator
// was away those words failed for as long: its worker must have a lease
// to find one again before the step is taken for lost, or a step alive
// and running would run twice (TestHandedStepLeaseRunsFromTheOrchestratorsStart).
func (o *Orchestrator) leaseDue(t *wf.Task) (time.Time, bool) {
	from := leaseFrom(t)
	if from == nil {
		return time.Time{}, false
	}
	if t.HandedWith == "" {
		return from.Add(o.cfg.StepLease), true
	}
	lease := o.cfg.StepLease
	if t.HandedLeaseMS > 0 {
		lease = time.Duration(t.HandedLeaseMS) * time.Millisecond
	}
	start := *from
	if o.startedAt.After(start) {
		start = o.startedAt
	}
	return start.Add(lease), true
}

// leaseFrom is when a working step's lease runs from: its dispatch, or
// its worker's last word that it still runs it (a step handed with a
// verdict, eager.go).
func leaseFrom(t *wf.Task) *time.Time {
	if t.RenewedAt != nil && (t.DispatchedAt == nil || t.RenewedAt.After(*t.DispatchedAt)) {
		return t.RenewedAt
	}
	return t.DispatchedAt
}

// rearm schedules the workflow's watchdog timer number n again, at at. A
// second schedule (this handler run twice) replaces the first.
func (o *Orchestrator) rearm(ctx context.Context, cp *wf.Checkpoint, n int, at time.Time) error {
	m, err := wf.WatchTimer(cp, n, at, time.Now())
	if err != nil {
		return err
	}
	return o.sendTimer(ctx, cp, m)
}

// working lists a checkpoint's working steps in id order, but for wait
// steps: no worker runs those, their timer ends them.
func working(cp *wf.Checkpoint) []string {
	var ids []string
	for id, t := range cp.Tasks {
		if t.Status == events.StateWorking && t.Wait == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// examine reads the streams for a sign of a step attempt (see the comment
// at the top of this file for what counts and why in this order); cp is
// the workflow's checkpoint as read before.
func (o *Orchestrator) examine(ctx context.Context, cp *wf.Checkpoint, step string, attempt int) (verdict, error) {
	t, ok := cp.Tasks[step]
	if !ok || cp.Status.Terminal() || t.Status != events.StateWorking || t.Attempt != attempt {
		return settled, nil
	}
	if len(cp.Outbox) > 0 {
		return unsent, nil
	}
	key := events.StepKey(cp.TenantID, cp.WorkflowID, step, attempt)
	if t.StepSeq > 0 {
		id, err := o.bus.StoredMsgID(ctx, subjects.StreamSteps, t.StepSeq)
		if err != nil && !isNotFound(err) {
			return alive, err
		}
		if err == nil && id == key {
			return alive, nil
		}
	} else {
		// Where the request is stored is not known (the write that would
		// have noted it lost a race, or it was parked): look for it first
		// in the capability's queue, where it waits for its turn (flow
		// control, admission.go), then among the capability's queued
		// requests. In that order, because the admission publishes a
		// request on the step subject before it removes it from the queue.
		// Past the limit, a queue is busy, not lost.
		match := func(id string) bool { return id == key }
		qsubj, err := subjects.Queue(cp.TenantID, t.Capability, cp.EffectivePriority())
		if err != nil {
			return settled, err
		}
		found, complete, err := o.bus.FindMsgID(ctx, subjects.StreamQueue, qsubj, match, searchLimit)
		if err != nil || found || !complete {
			return alive, err
		}
		subj, err := subjects.Step(cp.TenantID, t.Capability)
		if err != nil {
			return settled, err
		}
		found, complete, err = o.bus.FindMsgID(ctx, subjects.StreamSteps, subj, match, searchLimit)
		if err != nil || found || !complete {
			return alive, err
		}
	}
	subj, err := subjects.Reply(cp.TenantID, cp.WorkflowID)
	if err != nil {
		return settled, err
	}
	since := t.Since
	if since == 0 || since > attempt {
		since = attempt
	}
	answers := map[string]bool{}
	for a := since; a <= attempt; a++ {
		answers[events.StepKey(cp.TenantID, cp.WorkflowID, step, a)] = true
	}
	found, complete, err := o.bus.FindMsgID(ctx, subjects.StreamReplies, subj, func(id string) bool { return answers[id] }, searchLimit)
	if err != nil || found || !complete {
		return alive, err
	}
	return lost, nil
}

// redispatch dispatches a lost step attempt again as the next attempt, if
// it is still the live one; replies of either attempt count (Task.Since).
func (o *Orchestrator) redispatch(ctx context.Context, tenant, workflow, step string, attempt int) error {
	a, err := o.apply(ctx, tenant, workflow, wf.Lost{StepID: step, Attempt: attempt})
	if isNotFound(err) {
		return nil
	}
	if err == nil && len(a.Transitions) > 0 {
		// Said once the write stood: a transition run first on a stale
		// copy of the checkpoint may find the step answered on its retry.
		o.log.Warn("recovery: step lost: dispatched again", "tenant", tenant, "workflow", workflow, "step", step, "attempt", attempt+1)
		o.cfg.Metrics.recovered(events.RecoveryLost)
	}
	return err
}
