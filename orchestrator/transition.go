package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// errNoChange tells transition that the checkpoint needs no write (a
// duplicate or late message); pending outbox entries are still flushed.
var errNoChange = errors.New("orchestrator: no change")

// maxConflicts bounds optimistic-concurrency retries within one delivery;
// past it the delivery is naked and retried later.
const maxConflicts = 32

func (o *Orchestrator) load(ctx context.Context, tenant, workflow string) (*Checkpoint, uint64, error) {
	return o.loadFrom(ctx, tenant, workflow, false)
}

// loadFrom is load, through the bucket's leader when current is set: a
// transition whose write met a newer revision must not read the same
// stale revision again from a replica that has not caught up.
func (o *Orchestrator) loadFrom(ctx context.Context, tenant, workflow string, current bool) (*Checkpoint, uint64, error) {
	key, err := subjects.CheckpointKey(tenant, workflow)
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
	var cp Checkpoint
	if err := json.Unmarshal(e.Value, &cp); err != nil {
		return nil, 0, fmt.Errorf("orchestrator: checkpoint %s: %w", key, err)
	}
	return &cp, e.Revision, nil
}

// create stores a new checkpoint and publishes its outbox. It reports
// bus.ErrConflict if the workflow already exists; then the existing
// checkpoint's outbox is flushed, mending a crash after an earlier create.
func (o *Orchestrator) create(ctx context.Context, cp *Checkpoint) error {
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
	data, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	// Hold the workflow's stripe until the outbox is published and cleared,
	// as transition does: a reply to a step just published, handled in
	// this process, must not find the outbox still stored and take the
	// create for one interrupted by a crash.
	stripe := o.stripe(key)
	stripe.Lock()
	rev, err := o.checkpoints.Create(ctx, key, data)
	if err == nil {
		o.cfg.Metrics.created(ctx, cp)
		o.stored(cp, traceMark{})
		err = o.flush(ctx, key, cp, rev)
		stripe.Unlock()
		return err
	}
	stripe.Unlock()
	if errors.Is(err, bus.ErrConflict) {
		if ferr := o.transition(ctx, cp.TenantID, cp.WorkflowID, func(*Checkpoint) error { return errNoChange }); ferr != nil {
			return ferr
		}
	}
	return err
}

// stripe is the lock that serialises the transitions of the workflow whose
// checkpoint key is key within this process.
func (o *Orchestrator) stripe(key string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return &o.stripes[h.Sum32()%uint32(len(o.stripes))]
}

// transition applies fn to a workflow's newest checkpoint and stores the
// result with optimistic concurrency, retrying on conflict; then publishes
// what fn queued in the outbox. An outbox left by an earlier, interrupted
// transition is published first (dedup keys make that idempotent).
func (o *Orchestrator) transition(ctx context.Context, tenant, workflow string, fn func(cp *Checkpoint) error) error {
	key, err := subjects.CheckpointKey(tenant, workflow)
	if err != nil {
		return err
	}
	stripe := o.stripe(key)
	stripe.Lock()
	defer stripe.Unlock()
	for attempt := range maxConflicts {
		if attempt > 0 {
			// Another orchestrator process won the revision: back off a
			// little, with jitter, before reading it again.
			time.Sleep(time.Duration(rand.Int64N(int64(attempt)*int64(time.Millisecond))) + 100*time.Microsecond)
		}
		cp, rev, fromCache := o.cached(key, attempt)
		if !fromCache {
			if cp, rev, err = o.loadFrom(ctx, tenant, workflow, attempt > 1); err != nil {
				return err
			}
		}
		stale := len(cp.Outbox) > 0
		if stale {
			// An earlier transition stored its decisions but did not finish
			// publishing them (its process died, or is still at it): finish
			// it; dedup keys make the repeat harmless.
			if err := o.publish(ctx, cp); err != nil {
				return err
			}
			cp.Outbox = nil
			cp.ResumeCount++
		}
		was := o.cfg.Metrics.snapshot(cp)
		mark := markTrace(cp)
		err = fn(cp)
		if errors.Is(err, errNoChange) && fromCache {
			// "Nothing to do" must be decided on the stored checkpoint, not
			// on this process's copy: another orchestrator may have moved
			// the workflow on (dispatched the step this reply answers).
			o.cache.Delete(key)
			continue
		}
		if errors.Is(err, errNoChange) {
			if !stale {
				return nil
			}
			if _, err = o.clear(ctx, key, cp, rev); errors.Is(err, bus.ErrConflict) {
				o.cache.Delete(key)
				continue
			}
			o.cache.Delete(key)
			return err
		}
		if err != nil {
			return err
		}
		if err := o.recordTurn(ctx, cp); err != nil {
			return err
		}
		cp.UpdatedAt = time.Now().UTC()
		data, err := json.Marshal(cp)
		if err != nil {
			return err
		}
		rev, err = o.checkpoints.Update(ctx, key, data, rev)
		if errors.Is(err, bus.ErrConflict) {
			o.cache.Delete(key)
			continue
		}
		if err != nil {
			return err
		}
		o.cfg.Metrics.observe(ctx, was, cp)
		o.stored(cp, mark)
		return o.flush(ctx, key, cp, rev)
	}
	return fmt.Errorf("orchestrator: checkpoint %s: %w after %d attempts", key, bus.ErrConflict, maxConflicts)
}

// flush publishes cp's outbox, then clears it in KV unless another
// transition got there first (which then flushed it itself).
func (o *Orchestrator) flush(ctx context.Context, key string, cp *Checkpoint, rev uint64) error {
	if len(cp.Outbox) == 0 {
		o.remember(key, cp, rev)
		return nil
	}
	if err := o.publish(ctx, cp); err != nil {
		o.cache.Delete(key)
		return err
	}
	cp.Outbox = nil
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

// cached is this process's copy of a checkpoint as it last wrote it, which
// saves the read of the next transition; a conflict on write proves it
// stale, and the retry reads the bucket. Only the first attempt uses it.
type cached struct {
	data []byte
	rev  uint64
}

func (o *Orchestrator) cached(key string, attempt int) (*Checkpoint, uint64, bool) {
	if attempt > 0 {
		return nil, 0, false
	}
	v, ok := o.cache.Load(key)
	if !ok {
		return nil, 0, false
	}
	c := v.(cached)
	var cp Checkpoint
	if json.Unmarshal(c.data, &cp) != nil {
		return nil, 0, false
	}
	return &cp, c.rev, true
}

// remember caches a checkpoint this process just stored at rev; a finished
// workflow is forgotten.
func (o *Orchestrator) remember(key string, cp *Checkpoint, rev uint64) {
	if cp.Status.Terminal() {
		o.cache.Delete(key)
		return
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return
	}
	o.cache.Store(key, cached{data: data, rev: rev})
}

// clear writes cp (with an empty outbox) if it had one at rev.
func (o *Orchestrator) clear(ctx context.Context, key string, cp *Checkpoint, rev uint64) (uint64, error) {
	data, err := json.Marshal(cp)
	if err != nil {
		return rev, err
	}
	return o.checkpoints.Update(ctx, key, data, rev)
}

// publish publishes cp's outbox, and notes in cp where each step request
// is stored, for the watchdog (lease.go).
func (o *Orchestrator) publish(ctx context.Context, cp *Checkpoint) error {
	acks, err := o.bus.PublishAll(ctx, envelopes(cp, cp.Outbox))
	if err != nil {
		return err
	}
	for i, m := range cp.Outbox {
		if m.Type != events.TypeStepRequested {
			continue
		}
		if t, ok := cp.Tasks[m.StepID]; ok && m.MsgID == events.StepKey(cp.TenantID, cp.WorkflowID, m.StepID, t.Attempt) {
			t.StepSeq = acks[i].Sequence
		}
	}
	return nil
}

// envelopes turns outgoing messages of a workflow into what the bus
// publishes, each with its dedup key.
func envelopes(cp *Checkpoint, msgs []Outgoing) []bus.Message {
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
