package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// maxConflicts bounds optimistic-concurrency retries within one delivery;
// past it the delivery is naked and retried later.
const maxConflicts = 32

// policy is what the engine needs of the configuration and, for flow
// control, of the load of the plan's capabilities: those busy, and a
// reservation on the others that settle ends.
func (o *Orchestrator) policy(tenant string, plan events.Plan, freed string) (workflow.Policy, []string) {
	busy, reserved := o.admission.park(tenant, plan, freed)
	return workflow.Policy{ApprovalThreshold: o.cfg.ApprovalThreshold, StepLease: o.cfg.StepLease, Park: busy}, reserved
}

func (o *Orchestrator) load(ctx context.Context, tenant, wf string) (*workflow.Checkpoint, uint64, error) {
	return o.loadFrom(ctx, tenant, wf, false)
}

// loadFrom is load, through the bucket's leader when current is set: a
// transition whose write met a newer revision must not read the same
// stale revision again from a replica that has not caught up.
func (o *Orchestrator) loadFrom(ctx context.Context, tenant, wf string, current bool) (*workflow.Checkpoint, uint64, error) {
	key, err := subjects.CheckpointKey(tenant, wf)
	if err != nil {
		return nil, 0, err
	}
	get := o.checkpoints.Get
	if current {
		get = o.checkpoints.GetCurrent
	}
	e, err := get(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	var cp workflow.Checkpoint
	if err := workflow.UnmarshalCheckpoint(e.Value, &cp); err != nil {
		return nil, 0, fmt.Errorf("orchestrator: checkpoint %s: %w", key, err)
	}
	return &cp, e.Revision, nil
}

// applied is what a stored transition did, and the workflow's status
// after it (also when the input did not apply).
type applied struct {
	workflow.Effects
	Status events.State
	// Handed is the step request handed back to the worker whose answer
	// the transition recorded (eager.go), nil if none.
	Handed *events.Envelope
}

// begin applies an input to a new workflow's checkpoint (Planned, Forked,
// Malformed): the checkpoint create then stores it.
func (o *Orchestrator) begin(cp *workflow.Checkpoint, in workflow.Input) (workflow.Effects, []trace.Span, error) {
	plan := cp.Plan
	switch in := in.(type) { // the plan is the input's until it is applied
	case workflow.Planned:
		plan = in.Plan
	case workflow.Forked:
		if in.Source != nil {
			plan = in.Source.Plan
		}
	}
	pol, reserved := o.policy(cp.TenantID, plan, "")
	eff, err := workflow.Apply(cp, in, time.Now(), pol)
	o.admission.settle(reserved, &eff)
	if err != nil {
		return eff, nil, err
	}
	spans := o.dispatched(cp, &eff)
	cp.Outbox = append(cp.Outbox, eff.Outbox...)
	return eff, spans, nil
}

// create stores a new checkpoint and publishes its outbox. It reports
// bus.ErrConflict if the workflow already exists; then the existing
// checkpoint's outbox is flushed, mending a crash after an earlier create.
func (o *Orchestrator) create(ctx context.Context, cp *workflow.Checkpoint, eff workflow.Effects, spans []trace.Span) error {
	key, err := subjects.CheckpointKey(cp.TenantID, cp.WorkflowID)
	if err != nil {
		return err
	}
	// A workflow that ends as it starts (its plan was refused) is a turn
	// of its session too; were the submission already planned, the
	// append is a no-op or puts its latest outcome in place.
	if err := o.recordTurn(ctx, cp); err != nil {
		return err
	}
	data, err := o.store(cp)
	if err == nil {
		data, err = o.fit(ctx, cp, data)
	}
	if err != nil {
		return err
	}
	// Hold the workflow's lock until the outbox is published and cleared,
	// as transition does: a reply to a step just published, handled in
	// this process, must not find the outbox still stored and take the
	// create for one interrupted by a crash.
	unlock := o.locks.lock(key)
	rev, err := o.checkpoints.Create(ctx, key, data)
	if err == nil {
		o.cfg.Metrics.created(ctx, cp, eff)
		o.stored(cp, eff, spans)
		started := o.freeSlot(ctx, cp, eff)
		err = o.flush(ctx, key, cp, rev, false)
		o.startLater(cp, started) // before the next transition may take cp from the cache
		unlock()
		o.admitted(eff)
		return err
	}
	unlock()
	if errors.Is(err, bus.ErrConflict) {
		if ferr := o.settle(ctx, cp.TenantID, cp.WorkflowID); ferr != nil {
			return ferr
		}
	}
	return err
}

// settle publishes what an earlier, interrupted transition left in a
// workflow's outbox, and clears it.
func (o *Orchestrator) settle(ctx context.Context, tenant, wf string) error {
	_, err := o.transition(ctx, tenant, wf, nil)
	return err
}

// apply is transition for the callers to whom a late or duplicate input
// is no news: ErrStale is nil to them.
func (o *Orchestrator) apply(ctx context.Context, tenant, wf string, in workflow.Input) (applied, error) {
	a, err := o.transition(ctx, tenant, wf, in)
	if errors.Is(err, workflow.ErrStale) {
		return a, nil
	}
	return a, err
}

// transition applies an input to a workflow's newest checkpoint
// (workflow.Apply) and stores the result with optimistic concurrency,
// retrying on conflict; then publishes the effects, kept in the
// checkpoint's outbox until they are. An outbox left by an earlier,
// interrupted transition is published first (dedup keys make that
// idempotent). A nil input only does that. An input the engine finds
// stale or illegal is judged on the stored checkpoint, never on this
// process's copy; a reply or verdict found illegal (an attempt never
// dispatched) on the bucket's leader, since a replica may lag behind
// another orchestrator's write. Its error is returned as is.
func (o *Orchestrator) transition(ctx context.Context, tenant, wf string, in workflow.Input) (applied, error) {
	return o.transitionOffer(ctx, tenant, wf, in, nil)
}

// transitionOffer is transition for an input whose sender offered to take
// a step back with the verdict (eager.go): one the transition dispatches
// may be handed to it instead of published.
func (o *Orchestrator) transitionOffer(ctx context.Context, tenant, wf string, in workflow.Input, off *offer) (applied, error) {
	key, err := subjects.CheckpointKey(tenant, wf)
	if err != nil {
		return applied{}, err
	}
	defer o.locks.lock(key)()
	useCache, leader := true, false
	for attempt := range maxConflicts {
		cp, rev, fromCache := o.cached(ctx, key, useCache)
		if !fromCache {
			if cp, rev, err = o.loadFrom(ctx, tenant, wf, leader); err != nil {
				return applied{}, err
			}
		}
		stale := len(cp.Outbox) > 0
		if stale {
			// An earlier transition stored its decisions but did not finish
			// publishing them (its process died, or is still at it): finish
			// it; dedup keys make the repeat harmless.
			if err := o.publish(ctx, cp); err != nil {
				return applied{}, err
			}
			cp.Outbox = nil
			if time.Since(cp.UpdatedAt) > time.Second {
				// Not an outbox its writer is about to clear (clearLater):
				// a transition interrupted by a crash.
				cp.ResumeCount++
			}
		}
		var eff workflow.Effects
		err = workflow.ErrStale
		if in != nil {
			pol, reserved := o.policy(cp.TenantID, cp.Plan, freed(cp, in))
			eff, err = workflow.Apply(cp, in, time.Now(), pol)
			// Settled now, stored or not: a conflict retries with a new
			// reservation.
			o.admission.settle(reserved, &eff)
		}
		refused := errors.Is(err, workflow.ErrStale) || errors.Is(err, workflow.ErrIllegal)
		if refused && in != nil && fromCache {
			// Decided again on the stored checkpoint: another orchestrator
			// may have moved the workflow on (dispatched the step this
			// reply answers).
			o.cache.Delete(key)
			useCache = false
			continue
		}
		if refused && in != nil && !leader && errors.Is(err, workflow.ErrIllegal) && !control(in) {
			// A reply for an attempt this copy never saw dispatched: a
			// replica behind the leader, or a reply no orchestrator asked
			// for. The leader's copy decides.
			useCache, leader = false, true
			continue
		}
		if refused {
			if !stale {
				return applied{Status: cp.Status}, orNil(in, err)
			}
			if _, err := o.clear(ctx, key, cp, rev); errors.Is(err, bus.ErrConflict) {
				o.cache.Delete(key)
				useCache = false
				continue
			} else if err != nil {
				o.cache.Delete(key)
				return applied{}, err
			}
			o.cache.Delete(key)
			return applied{Status: cp.Status}, orNil(in, err)
		}
		if err != nil {
			return applied{}, err
		}
		spans := o.dispatched(cp, &eff)
		handed := o.handBack(cp, &eff, off)
		cp.Outbox = append(cp.Outbox, eff.Outbox...)
		if err := o.recordTurn(ctx, cp); err != nil {
			return applied{}, err
		}
		data, err := o.store(cp)
		if err == nil {
			data, err = o.fit(ctx, cp, data)
		}
		if err != nil {
			return applied{}, err
		}
		rev, err = o.checkpoints.Update(ctx, key, data, rev)
		if errors.Is(err, bus.ErrConflict) {
			// Another orchestrator process won the revision: back off a
			// little, with jitter, before reading it again (from the
			// leader from the second time on).
			o.cache.Delete(key)
			useCache, leader = false, leader || attempt > 0
			time.Sleep(time.Duration(rand.Int64N(int64(attempt+1)*int64(time.Millisecond))) + 100*time.Microsecond)
			continue
		}
		if err != nil {
			return applied{}, err
		}
		o.cfg.Metrics.observe(ctx, cp, eff)
		o.tokens.spent(cp.TenantID, eff)
		o.stored(cp, eff, spans)
		started := o.freeSlot(ctx, cp, eff)
		o.stopSteps(ctx, cp, eff)
		err = o.flush(ctx, key, cp, rev, handed != nil)
		o.admitted(eff)
		o.startLater(cp, started)
		return applied{Effects: eff, Status: cp.Status, Handed: handed}, err
	}
	return applied{}, fmt.Errorf("orchestrator: checkpoint %s: %w after %d attempts", key, bus.ErrConflict, maxConflicts)
}

// orNil is the error of an input the engine refused; none for a flush
// (nil input).
func orNil(in workflow.Input, err error) error {
	if in == nil {
		return nil
	}
	return err
}

// flush publishes cp's outbox. A workflow that ended has its outbox
// cleared in KV at once (unless another transition got there first, which
// then flushed it itself). One still running does not: its next
// transition overwrites the stored outbox anyway, and usually comes
// within a millisecond or two (a reply), so the write that clears it is
// left to clearLater, which makes it only if no transition did meanwhile.
// That saves a KV write and a wait in series on most transitions. Until
// the outbox is cleared, another process reading the checkpoint publishes
// it again, which the dedup keys make harmless: the clear comes within
// clearDelay, far inside the streams' dedup window.
//
// With later, for a transition that handed a step back to its worker
// (eager.go), a running workflow's outbox is sent without waiting for the
// acknowledgements, so that the verdict, and the step with it, go at once
// and the step runs while its workflow's events are stored. This
// process's copy keeps the outbox until the next transition, or
// clearLater, finds them acknowledged (confirm); the stored checkpoint
// keeps it too. Should this process die before they are stored, the
// step's answer, or its lease if the worker dies too, is a transition of
// the workflow, which publishes a stored outbox first.
func (o *Orchestrator) flush(ctx context.Context, key string, cp *workflow.Checkpoint, rev uint64, later bool) error {
	o.unclear.Delete(key) // a revision newer than the one a clear waits for
	if len(cp.Outbox) == 0 {
		o.remember(key, cp, rev)
		return nil
	}
	deferClear := !cp.Status.Terminal() && o.cfg.ClearDelay > 0
	c := cached{cp: cp, rev: rev}
	if out := published(cp.Outbox); later && deferClear && len(out) > 0 {
		c.pending = &pending{p: o.bus.PublishAllAsync(envelopes(cp, out)), out: out}
	} else {
		if err := o.publish(ctx, cp); err != nil {
			o.cache.Delete(key)
			return err
		}
		cp.Outbox = nil
	}
	if deferClear {
		o.cache.Store(key, c)
		o.unclear.Store(key, rev)
		o.clearLater(key, rev)
		return nil
	}
	rev, err := o.clear(ctx, key, cp, rev)
	if err != nil {
		o.cache.Delete(key)
		if !errors.Is(err, bus.ErrConflict) {
			return err
		}
		return nil
	}
	o.remember(key, cp, rev)
	return nil
}

// pending is an outbox sent and not yet known to be stored (flush with
// later).
type pending struct {
	p   *bus.Publishing
	out []workflow.Outgoing
}

// confirm waits for the acknowledgements of cp's outbox sent by flush
// with later; once they are in, the outbox is published, as publish would
// leave it. It reports whether it is: if not, cp keeps its outbox, and
// whoever goes on with cp publishes it again.
func (o *Orchestrator) confirm(ctx context.Context, cp *workflow.Checkpoint, p *pending) bool {
	acks, err := p.p.Wait(ctx)
	if err != nil {
		o.log.Debug("outbox sent and not stored yet: published again", "workflow", cp.WorkflowID, "err", err)
		return false
	}
	noteSeqs(cp, p.out, acks)
	cp.Outbox = nil
	return true
}

// clearLater clears a published outbox still stored at rev after
// Config.ClearDelay, unless a transition has written the checkpoint since
// (it replaced the outbox). A failed write is tried again a few times;
// past that the checkpoint scan publishes the outbox again and clears it
// (heal), as after a crash.
func (o *Orchestrator) clearLater(key string, rev uint64) {
	o.background.Add(1)
	time.AfterFunc(o.cfg.ClearDelay, func() {
		defer o.background.Done()
		ctx := o.backgroundCtx
		for try := range 4 {
			if ctx.Err() != nil {
				return
			}
			done, err := o.clearNow(ctx, key, rev)
			if done {
				return
			}
			if err != nil {
				o.log.Debug("published outbox not cleared yet", "checkpoint", key, "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(50<<try) * time.Millisecond):
			}
		}
		o.log.Warn("published outbox not cleared (the checkpoint scan will)", "checkpoint", key)
	})
}

// clearNow writes the checkpoint stored at rev without its published
// outbox, if no transition of this process has written it since: from
// this process's copy, or else as read from the bucket's leader. It
// reports whether there is nothing left to do.
func (o *Orchestrator) clearNow(ctx context.Context, key string, rev uint64) (bool, error) {
	defer o.locks.lock(key)()
	if v, ok := o.unclear.Load(key); !ok || v.(uint64) != rev {
		return true, nil // a transition of this process wrote it since
	}
	var cp *workflow.Checkpoint
	if v, ok := o.cache.Load(key); ok && v.(cached).rev == rev {
		c := v.(cached)
		cp = c.cp
		if c.pending != nil && !o.confirm(ctx, cp, c.pending) {
			if err := o.publish(ctx, cp); err != nil {
				return false, err
			}
			cp.Outbox = nil
		}
		o.cache.Store(key, cached{cp: cp, rev: rev})
	} else {
		e, err := o.checkpoints.GetCurrent(ctx, key)
		if err != nil {
			return isNotFound(err), err
		}
		if e.Revision != rev {
			o.unclear.CompareAndDelete(key, rev)
			return true, nil
		}
		cp = &workflow.Checkpoint{}
		if err := workflow.UnmarshalCheckpoint(e.Value, cp); err != nil {
			return true, err
		}
		cp.Outbox = nil
	}
	data, err := o.store(cp)
	if err != nil {
		return true, err
	}
	o.cfg.Metrics.outboxClear()
	next, err := o.checkpoints.Update(ctx, key, data, rev)
	switch {
	case err == nil:
		o.unclear.CompareAndDelete(key, rev)
		if v, ok := o.cache.Load(key); ok && v.(cached).rev == rev {
			o.cache.Store(key, cached{cp: cp, rev: next})
		}
		return true, nil
	case errors.Is(err, bus.ErrConflict):
		o.unclear.CompareAndDelete(key, rev)
		o.cache.Delete(key)
		return true, nil // another process wrote it since
	}
	return false, err
}

// cached is this process's copy of a checkpoint as it last wrote it, which
// saves the read and the decoding of the next transition; a conflict on
// write proves it stale, and the retry reads the bucket. A transition
// takes the copy out of the cache (it changes it), and puts it back once
// stored; both happen under the workflow's lock.
type cached struct {
	cp  *workflow.Checkpoint
	rev uint64
	// pending is cp's outbox, sent and not yet known to be stored
	// (flush with later); nil if there is none.
	pending *pending
}

// cached takes this process's copy of a checkpoint, if use, with its
// outbox published (confirm) or, if it could not be confirmed, still in
// it for the transition to publish.
func (o *Orchestrator) cached(ctx context.Context, key string, use bool) (*workflow.Checkpoint, uint64, bool) {
	if !use {
		return nil, 0, false
	}
	v, ok := o.cache.LoadAndDelete(key)
	if !ok {
		return nil, 0, false
	}
	c := v.(cached)
	if c.pending != nil {
		o.confirm(ctx, c.cp, c.pending)
	}
	return c.cp, c.rev, true
}

// remember caches a checkpoint this process just stored at rev; a finished
// workflow is forgotten. The transition gives cp up: it is the next one's.
func (o *Orchestrator) remember(key string, cp *workflow.Checkpoint, rev uint64) {
	if cp.Status.Terminal() {
		o.cache.Delete(key)
		return
	}
	o.cache.Store(key, cached{cp: cp, rev: rev})
}

// clear writes cp (with an empty outbox) if it had one at rev.
func (o *Orchestrator) clear(ctx context.Context, key string, cp *workflow.Checkpoint, rev uint64) (uint64, error) {
	data, err := o.store(cp)
	if err != nil {
		return rev, err
	}
	return o.checkpoints.Update(ctx, key, data, rev)
}

// publish publishes cp's outbox, and notes in cp where each step request
// is stored, for the watchdog (lease.go).
func (o *Orchestrator) publish(ctx context.Context, cp *workflow.Checkpoint) error {
	out := published(cp.Outbox)
	if len(out) == 0 {
		return nil
	}
	acks, err := o.bus.PublishAll(ctx, envelopes(cp, out))
	if err != nil {
		return err
	}
	noteSeqs(cp, out, acks)
	return nil
}

// noteSeqs notes in cp where each step request of out is stored (acks,
// in out's order), for the watchdog (lease.go).
func noteSeqs(cp *workflow.Checkpoint, out []workflow.Outgoing, acks []bus.Published) {
	for i, m := range out {
		if m.Type != events.TypeStepRequested {
			continue
		}
		if _, _, _, err := subjects.ParseQueue(m.Subject); err == nil {
			continue // a parked request's sequence is in the queue, not AGENTBUS_STEPS
		}
		if t, ok := cp.Tasks[m.StepID]; ok && m.MsgID == events.StepKey(cp.TenantID, cp.WorkflowID, m.StepID, t.Attempt) {
			t.StepSeq = acks[i].Sequence
		}
	}
}

// envelopes turns outgoing messages of a workflow into what the bus
// publishes, each with its dedup key.
func envelopes(cp *workflow.Checkpoint, msgs []workflow.Outgoing) []bus.Message {
	batch := make([]bus.Message, len(msgs))
	for i, m := range msgs {
		tp := m.TraceParent
		if tp == "" {
			tp = cp.TraceParent
		}
		batch[i] = bus.Message{Pending: bus.Pending{Subject: m.Subject, MsgID: m.MsgID, Env: events.Envelope{
			ID: m.MsgID, Source: events.SourceOrchestrator, Type: m.Type, Time: m.Time,
			TenantID: cp.TenantID, WorkflowID: cp.WorkflowID, StepID: m.StepID, Data: m.Data, TraceParent: tp,
		}}, Target: m.Target}
		if m.At != nil {
			batch[i].At = *m.At
		}
	}
	return batch
}

// admitted tells flow control what a stored transition did: a step
// request parked in a queue wakes the admission, a step finished frees a
// slot for the next one waiting.
func (o *Orchestrator) admitted(eff workflow.Effects) {
	parked := false
	for _, d := range eff.Dispatches {
		parked = parked || d.Parked
	}
	if parked {
		o.admission.nudge()
		return
	}
	for _, tr := range eff.Transitions {
		if tr.Cause == workflow.CauseReply {
			o.admission.freed()
			return
		}
	}
}

// control reports whether an input is a user's control, whose refusal is
// an answer to the user rather than a message to drop.
func control(in workflow.Input) bool {
	switch in.Kind() {
	case workflow.KindCancel, workflow.KindApprove, workflow.KindReject, workflow.KindResume,
		workflow.KindSignal, workflow.KindPause, workflow.KindUnpause:
		return true
	}
	return false
}

// freed is the capability whose slot a reply frees: its step's.
func freed(cp *workflow.Checkpoint, in workflow.Input) string {
	var step string
	switch in := in.(type) {
	case workflow.Completed:
		step = in.StepID
	case workflow.Failed:
		step = in.StepID
	default:
		return ""
	}
	if t := cp.Tasks[step]; t != nil {
		return t.Capability
	}
	return ""
}
