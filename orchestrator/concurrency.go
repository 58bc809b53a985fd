package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// Concurrency keys (#23). A submission's concurrency key (or a session
// turn's double_text, the key "session:<id>" with limit 1) bounds how many
// of its tenant's workflows with the key run at once. Its state is one
// entry of subjects.BucketConcurrency, written with compare-and-set:
// the limit, the workflows running (holding a slot) and those waiting, in
// submission order.
//
//   - acquire, in handleSubmission before the checkpoint is created,
//     decides by the submission's policy: a slot (the workflow starts),
//     a place in the queue (Planned.Wait), a cancel at once
//     (Planned.Cancel), or the slots of running ones to preempt (their
//     cancel follows, as a user's: recorded, then the Cancel input).
//   - release, once a stored transition ended a workflow (eff.Outcome),
//     drops it from the entry and gives the free slots to the waiting
//     ones in order, each started with the Released input.
//
// Both are idempotent by workflow id: a redelivered submission finds its
// place; a release repeated finds nothing to drop. A release lost to a
// crash is repaired by the checkpoint scan: when an ended workflow's last
// revision, or a waiting one's, comes of age it releases again, dropping
// holders whose workflow has ended, and starts every holder still
// waiting.

// keyState is what subjects.BucketConcurrency holds for a key.
type keyState struct {
	Key     string   `json:"key"`
	Limit   int      `json:"limit"`
	Running []string `json:"running"`
	Waiting []string `json:"waiting"`
	// Preempting holds, until their cancels are applied, the running
	// workflows a cancel_in_progress submission took the slots of: if the
	// orchestrator dies between taking the slots and canceling them, the
	// submission's redelivery finds them here and cancels them then,
	// instead of letting them run on uncounted.
	Preempting []preemption `json:"preempting,omitempty"`
}

// preemption is one cancel_in_progress submission's preempted workflows.
type preemption struct {
	By  string   `json:"by"`
	IDs []string `json:"ids"`
}

// grant is what acquire decided for a new workflow.
type grant struct {
	// Wait and Cancel become the Planned input's: why it waits, why it is
	// canceled at once ("" for neither: it starts).
	Wait, Cancel string
	// Preempt are the running workflows whose slots it took
	// (cancel_in_progress); Reason is their cancel's reason.
	Preempt []string
	Reason  string
	// Start are waiting workflows found with a free slot (a release
	// lost): they start too.
	Start []string
}

// keyPolicy is a submission's concurrency key, with its session's
// double-text policy if that is what it came from.
type keyPolicy struct {
	events.Concurrency
	Session, DoubleText string
}

// submissionKey is the concurrency key a submission asks for, if any.
func submissionKey(sub events.WorkflowSubmitted) (keyPolicy, bool) {
	if sub.Fork != nil {
		return keyPolicy{}, false // a fork starts as it is asked to
	}
	if sub.Concurrency != nil && sub.Concurrency.Validate() == nil {
		return keyPolicy{Concurrency: *sub.Concurrency}, true
	}
	if sub.SessionID != "" {
		if c, ok := events.SessionConcurrency(sub.SessionID, sub.DoubleText); ok {
			return keyPolicy{Concurrency: c, Session: sub.SessionID, DoubleText: sub.DoubleText}, true
		}
	}
	return keyPolicy{}, false
}

// decide applies a new workflow's acquire to a key's state (pure).
func (st *keyState) decide(wf string, k keyPolicy) grant {
	st.Key, st.Limit = k.Key, k.EffectiveLimit()
	var g grant
	g.Start = st.fill()
	switch {
	case slices.Contains(st.Running, wf):
		// A redelivery: it holds its slot, and cancels again what it
		// preempted if those cancels were not known to be applied.
		if i := slices.IndexFunc(st.Preempting, func(p preemption) bool { return p.By == wf }); i >= 0 {
			g.Preempt, g.Reason = slices.Clone(st.Preempting[i].IDs), preemptReason(wf, k)
		}
		return g
	case slices.Contains(st.Waiting, wf):
		g.Wait = st.waitMessage(slices.Index(st.Waiting, wf))
		return g
	}
	switch k.EffectivePolicy() {
	case events.ConcurrencyCancelNewest:
		if len(st.Running) < st.Limit {
			st.Running = append(st.Running, wf)
			return g
		}
		g.Cancel = fmt.Sprintf("canceled at once: concurrency key %q has %d running (limit %d, policy cancel_newest)", k.Key, len(st.Running), st.Limit)
		if k.DoubleText != "" {
			g.Cancel = fmt.Sprintf("rejected: session %q has a turn running (%s); double_text %s ends this one at once", k.Session, st.Running[0], k.DoubleText)
		}
	case events.ConcurrencyCancelInProgress:
		if n := len(st.Running) - st.Limit + 1; n > 0 {
			g.Preempt = slices.Clone(st.Running[:n])
			st.Running = slices.Delete(st.Running, 0, n)
			g.Reason = preemptReason(wf, k)
			st.Preempting = append(st.Preempting, preemption{By: wf, IDs: slices.Clone(g.Preempt)})
		}
		st.Running = append(st.Running, wf)
	default:
		if len(st.Running) < st.Limit && len(st.Waiting) == 0 {
			st.Running = append(st.Running, wf)
			return g
		}
		st.Waiting = append(st.Waiting, wf)
		g.Wait = st.waitMessage(len(st.Waiting) - 1)
	}
	return g
}

// preemptReason is the cancel reason of the workflows wf preempts.
func preemptReason(wf string, k keyPolicy) string {
	switch k.DoubleText {
	case events.DoubleTextInterrupt:
		return fmt.Sprintf("interrupted by a newer turn of session %q (workflow %s, double_text interrupt)", k.Session, wf)
	case events.DoubleTextRollback:
		return fmt.Sprintf("rolled back by a newer turn of session %q (workflow %s, double_text rollback): this turn is dropped from the session", k.Session, wf)
	}
	return fmt.Sprintf("canceled: workflow %s took its slot of concurrency key %q (policy cancel_in_progress)", wf, k.Key)
}

func (st *keyState) waitMessage(ahead int) string {
	return fmt.Sprintf("waiting for concurrency key %q: %d running (limit %d), %d waiting ahead", st.Key, len(st.Running), st.Limit, ahead)
}

// fill gives free slots to waiting workflows, oldest first, and returns
// them.
func (st *keyState) fill() []string {
	var started []string
	for len(st.Running) < max(st.Limit, 1) && len(st.Waiting) > 0 {
		started = append(started, st.Waiting[0])
		st.Running = append(st.Running, st.Waiting[0])
		st.Waiting = st.Waiting[1:]
	}
	return started
}

// drop removes a workflow from the running and the waiting ones.
func (st *keyState) drop(wf string) {
	st.Running = slices.DeleteFunc(st.Running, func(s string) bool { return s == wf })
	st.Waiting = slices.DeleteFunc(st.Waiting, func(s string) bool { return s == wf })
}

// concurrencyKV opens subjects.BucketConcurrency once.
func (o *Orchestrator) concurrencyKV(ctx context.Context) (*bus.KV, error) {
	o.concMu.Lock()
	defer o.concMu.Unlock()
	if o.conc != nil {
		return o.conc, nil
	}
	kv, err := o.bus.Concurrency(ctx)
	if err != nil {
		return nil, err
	}
	o.conc = kv
	return kv, nil
}

// updateKey reads a key's state, lets change decide (it reports whether
// it changed anything) and writes it with compare-and-set, again on a
// conflict (from the bucket's leader).
func (o *Orchestrator) updateKey(ctx context.Context, tenant, key string, change func(*keyState) bool) error {
	kv, err := o.concurrencyKV(ctx)
	if err != nil {
		return err
	}
	k, err := subjects.ConcurrencyKey(tenant, key)
	if err != nil {
		return err
	}
	return casUpdate(ctx, kv, k, "concurrency key", func(value []byte, found bool) ([]byte, casOp, error) {
		var st keyState
		if found {
			if err := json.Unmarshal(value, &st); err != nil {
				return nil, casSkip, err
			}
		}
		if !change(&st) {
			return nil, casSkip, nil
		}
		if len(st.Running) == 0 && len(st.Waiting) == 0 && len(st.Preempting) == 0 {
			// Nothing runs or waits under the key: its entry goes (with
			// the same fence as a write), so that keys used once (a
			// session, a user) do not pile up in the bucket.
			return nil, casDelete, nil
		}
		b, err := json.Marshal(st)
		return b, casPut, err
	})
}

// acquire decides a new workflow's place under its concurrency key.
func (o *Orchestrator) acquire(ctx context.Context, tenant, wf string, k keyPolicy) (grant, error) {
	var g grant
	err := o.updateKey(ctx, tenant, k.Key, func(st *keyState) bool {
		before, _ := json.Marshal(st)
		g = st.decide(wf, k)
		after, _ := json.Marshal(st)
		return string(before) != string(after)
	})
	return g, err
}

// preempt cancels the workflows whose slots a cancel_in_progress
// submission (wf) took, as a user's cancel: recorded first, so that
// workers stop their running steps, then applied. Once every one is
// canceled (or had ended), the key forgets the pending preemption; if one
// could not be, it returns the error, so that the submission is tried
// again and cancels it then.
func (o *Orchestrator) preempt(ctx context.Context, tenant, key, wf string, g grant, rollback bool) error {
	if len(g.Preempt) == 0 {
		return nil
	}
	var errs []error
	for _, id := range g.Preempt {
		if err := o.recordCancel(ctx, tenant, id, g.Reason); err != nil {
			errs = append(errs, fmt.Errorf("orchestrator: preempt %s: %w", id, err))
			continue
		}
		a, err := o.apply(ctx, tenant, id, workflow.Cancel{Reason: g.Reason, Rollback: rollback})
		var refused *workflow.IllegalError
		if err == nil && a.Status != events.StateCanceled || errors.As(err, &refused) || errors.Is(err, workflow.ErrStale) {
			_ = o.clearCancel(ctx, tenant, id) // it had ended already
			continue
		}
		if err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("orchestrator: preempt %s: %w", id, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		o.log.Warn("concurrency key: preempting running workflows (the submission is tried again)", "tenant", tenant, "workflow", wf, "err", err)
		return err
	}
	return o.updateKey(ctx, tenant, key, func(st *keyState) bool {
		n := len(st.Preempting)
		st.Preempting = slices.DeleteFunc(st.Preempting, func(p preemption) bool { return p.By == wf })
		return n != len(st.Preempting)
	})
}

// release drops an ended workflow from its concurrency key and starts
// the waiting ones its slot (or slots found free) go to. With repair, it
// also drops running holders whose workflow has ended (a release lost to
// a crash) and starts every holder still waiting (a start lost).
func (o *Orchestrator) release(ctx context.Context, tenant, wf string, c events.Concurrency, repair bool) error {
	var started, running []string
	err := o.updateKey(ctx, tenant, c.Key, func(st *keyState) bool {
		n, w := len(st.Running), len(st.Waiting)
		st.drop(wf)
		p := len(st.Preempting)
		if repair {
			st.Running = slices.DeleteFunc(st.Running, func(id string) bool { return o.ended(ctx, tenant, id) })
			// A preemption whose workflows all ended needs no redelivery
			// to finish it (its submission may never come back).
			st.Preempting = slices.DeleteFunc(st.Preempting, func(pr preemption) bool {
				return !slices.ContainsFunc(pr.IDs, func(id string) bool { return !o.ended(ctx, tenant, id) })
			})
		}
		started = st.fill()
		running = slices.Clone(st.Running)
		return n != len(st.Running) || w != len(st.Waiting) || p != len(st.Preempting) || len(started) > 0
	})
	if err != nil {
		return err
	}
	if repair {
		started = running
	}
	return o.start(ctx, tenant, c.Key, wf, started)
}

// ended reports whether a workflow's checkpoint says it ended; one not
// (yet) stored has not: its submission is still being handled.
func (o *Orchestrator) ended(ctx context.Context, tenant, wf string) bool {
	cp, _, err := o.load(ctx, tenant, wf)
	return err == nil && cp.Status.Terminal()
}

// start applies Released to workflows given a slot. One whose checkpoint
// is not stored yet finds its slot when it is (handleSubmission checks).
func (o *Orchestrator) start(ctx context.Context, tenant, key, after string, ids []string) error {
	var errs []error
	for _, id := range ids {
		msg := fmt.Sprintf("started: a slot of concurrency key %q is free (workflow %s ended)", key, after)
		if _, err := o.apply(ctx, tenant, id, workflow.Released{Message: msg}); err != nil && !isNotFound(err) && !errors.Is(err, workflow.ErrIllegal) {
			errs = append(errs, fmt.Errorf("orchestrator: start %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// freeSlot is called once a stored transition ended a workflow, before
// its ending is published (whoever sees the end finds the slot free):
// the workflow leaves its concurrency key, and the waiting ones its slot
// goes to are returned, for startLater. If it fails, or the process dies
// first, the checkpoint scan releases the key again.
func (o *Orchestrator) freeSlot(ctx context.Context, cp *workflow.Checkpoint, eff workflow.Effects) []string {
	if eff.Outcome == "" || cp.Concurrency == nil {
		return nil
	}
	var started []string
	err := o.updateKey(ctx, cp.TenantID, cp.Concurrency.Key, func(st *keyState) bool {
		n, w := len(st.Running), len(st.Waiting)
		st.drop(cp.WorkflowID)
		started = st.fill()
		return n != len(st.Running) || w != len(st.Waiting) || len(started) > 0
	})
	if err != nil {
		o.log.Warn("concurrency key not released (the checkpoint scan repairs it)", "tenant", cp.TenantID, "workflow", cp.WorkflowID, "err", err)
	}
	return started
}

// startLater starts the workflows freeSlot gave a slot, in the
// background: not inside the caller's transition, which
// holds its own workflow's lock across their writes otherwise.
func (o *Orchestrator) startLater(cp *workflow.Checkpoint, ids []string) {
	if len(ids) == 0 {
		return
	}
	tenant, key, after := cp.TenantID, cp.Concurrency.Key, cp.WorkflowID
	o.background.Add(1)
	go func() {
		defer o.background.Done()
		if err := o.start(o.backgroundCtx, tenant, key, after, ids); err != nil && o.backgroundCtx.Err() == nil {
			o.log.Warn("concurrency key: waiting workflows not started (the checkpoint scan repairs it)", "tenant", tenant, "workflows", ids, "err", err)
		}
	}()
}

// repairWaiting is the checkpoint scan's look at a workflow that has
// waited for its concurrency key for a lease: it is put back in the
// key's queue if the entry lost it, holders whose workflow ended are
// dropped, and the free slots filled; every holder still waiting
// (this one, if it has a slot) starts.
func (o *Orchestrator) repairWaiting(ctx context.Context, cp *workflow.Checkpoint) error {
	tenant, wf, c := cp.TenantID, cp.WorkflowID, *cp.Concurrency
	var running []string
	err := o.updateKey(ctx, tenant, c.Key, func(st *keyState) bool {
		changed := false
		if st.Key == "" {
			st.Key, st.Limit, changed = c.Key, c.EffectiveLimit(), true
		}
		if !slices.Contains(st.Running, wf) && !slices.Contains(st.Waiting, wf) {
			st.Waiting, changed = append(st.Waiting, wf), true
		}
		n := len(st.Running)
		st.Running = slices.DeleteFunc(st.Running, func(id string) bool { return o.ended(ctx, tenant, id) })
		started := st.fill()
		running = slices.Clone(st.Running)
		return changed || n != len(st.Running) || len(started) > 0
	})
	if err != nil {
		return err
	}
	return o.start(ctx, tenant, c.Key, "(repair)", running)
}

// startHeld starts a new workflow that acquire queued if a release gave
// it a slot before its checkpoint was stored (and so could not start it).
func (o *Orchestrator) startHeld(ctx context.Context, tenant, wf string, c events.Concurrency) error {
	kv, err := o.concurrencyKV(ctx)
	if err != nil {
		return err
	}
	k, err := subjects.ConcurrencyKey(tenant, c.Key)
	if err != nil {
		return err
	}
	e, err := kv.GetCurrent(ctx, k)
	if err != nil {
		return err
	}
	var st keyState
	if err := json.Unmarshal(e.Value, &st); err != nil || !slices.Contains(st.Running, wf) {
		return err
	}
	return o.start(ctx, tenant, c.Key, "before it was stored", []string{wf})
}

// countKeys counts, by tenant, the workflows waiting for and holding the
// slots of concurrency keys (the checkpoint scan's lease holder sets the
// gauges from it): one read of the bucket, whose entries are the keys in
// use.
func (o *Orchestrator) countKeys(ctx context.Context) (waiting, running map[string]int, err error) {
	kv, err := o.concurrencyKV(ctx)
	if err != nil {
		return nil, nil, err
	}
	es, err := kv.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	waiting, running = map[string]int{}, map[string]int{}
	for _, e := range es {
		tenant, _, ok := strings.Cut(e.Key, ".")
		var st keyState
		if !ok || json.Unmarshal(e.Value, &st) != nil {
			continue
		}
		waiting[tenant] += len(st.Waiting)
		running[tenant] += len(st.Running)
	}
	return waiting, running, nil
}

// concState keeps the lazily opened concurrency bucket.
type concState struct {
	concMu sync.Mutex
	conc   *bus.KV
}

// retake gives an ended workflow being resumed a slot of its concurrency
// key again, if the key has room; else it says why not.
func (o *Orchestrator) retake(ctx context.Context, cp *workflow.Checkpoint) (string, error) {
	busy := ""
	err := o.updateKey(ctx, cp.TenantID, cp.Concurrency.Key, func(st *keyState) bool {
		busy = ""
		if slices.Contains(st.Running, cp.WorkflowID) {
			return false
		}
		limit := st.Limit
		if limit == 0 {
			limit = cp.Concurrency.EffectiveLimit()
			st.Key, st.Limit = cp.Concurrency.Key, limit
		}
		if len(st.Running) >= limit || len(st.Waiting) > 0 {
			busy = fmt.Sprintf("not resumed: concurrency key %q has %d running (limit %d) and %d waiting; resume it when one ends",
				cp.Concurrency.Key, len(st.Running), limit, len(st.Waiting))
			return false
		}
		st.Running = append(st.Running, cp.WorkflowID)
		return true
	})
	return busy, err
}

// freeKey gives back the slot retake took for a resume that did not apply.
func (o *Orchestrator) freeKey(ctx context.Context, cp *workflow.Checkpoint) {
	if err := o.updateKey(ctx, cp.TenantID, cp.Concurrency.Key, func(st *keyState) bool {
		if !slices.Contains(st.Running, cp.WorkflowID) {
			return false
		}
		st.drop(cp.WorkflowID)
		return true
	}); err != nil {
		o.log.Warn("concurrency key: a slot taken for a resume that did not apply was not given back", "workflow", cp.WorkflowID, "err", err)
	}
}
