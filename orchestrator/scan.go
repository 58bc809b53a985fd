package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	wf "github.com/agentbus/agentbus/workflow"
)

// The checkpoint scan is the watchdog's backstop. Timers live in a stream,
// and a server that loses acknowledged messages may lose a timer with the
// step or reply it was to watch; it may lose the trigger of a transition
// whose outbox was stored and not yet published (an orchestrator killed in
// between); it may lose a deadline. Such a workflow waits for nothing that
// will ever come, and nothing in it changes any more: its checkpoint's
// newest revision only grows old.
//
// So the scan walks the checkpoint bucket's stream, which holds revisions
// in the order they were written, with a cursor: each pass reads (headers
// only) the revisions written after the cursor and at least StepLease ago,
// at most ScanBudget of them, and keeps each key's last one. A key whose
// newest revision is that one has not changed for a lease; if its workflow
// is active, the scan heals it: publishes a stranded outbox, expires a
// passed deadline, examines every working step as the watchdog would
// (lost: dispatched again), and re-arms the workflow's timers if the server
// lost them; if it has finished with its outbox still stored (its end
// stored and not published, by a trigger that is not redelivered), the
// scan publishes it. Every revision is looked at once, when it comes of age, so a
// pass costs what the workflows wrote in one interval, not what the bucket
// holds; a workflow that is healed writes again and is looked at again if
// it stalls again.
//
// One orchestrator at a time scans: the one holding the lease, a key in
// BucketLeases that carries the cursor and that its holder rewrites on each
// pass (revision-checked). The others watch the key's revision; when it
// has not changed for three intervals on their own clock (so clocks need
// not agree), one of them takes the lease over, cursor and all.

// scanLease is the value of the scan's lease key.
type scanLease struct {
	Owner string `json:"owner"`
	// Cursor is the checkpoint stream sequence scanned through.
	Cursor uint64    `json:"cursor"`
	At     time.Time `json:"at"`
}

// Holder and Hold make scanLease a bus.LeaseState.
func (l *scanLease) Holder() string { return l.Owner }

func (l *scanLease) Hold(owner string, at time.Time) { l.Owner, l.At = owner, at }

// scanner runs the checkpoint scan. Only run's goroutine uses it.
type scanner struct {
	o     *Orchestrator
	lease *bus.Lease
}

// scanReport says what one pass did.
type scanReport struct {
	Held     bool   // this orchestrator held the lease and scanned
	Read     int    // revisions read
	Examined int    // active workflows unchanged for a lease
	Healed   int    // of those, the ones a transition was needed for
	Cursor   uint64 // where the next pass starts
	// Submissions is what the submission reconciler did (reconcile.go).
	Submissions reconcileReport
}

func newScanner(o *Orchestrator, kv *bus.KV) *scanner {
	return &scanner{o: o, lease: bus.NewLease(kv, subjects.LeaseScan, uuid.NewString(), 3*o.cfg.ScanInterval)}
}

func (s *scanner) run(ctx context.Context) {
	t := time.NewTicker(s.o.cfg.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r, err := s.once(ctx)
		if r.Held {
			if w, n, cerr := s.o.countKeys(ctx); cerr == nil {
				s.o.cfg.Metrics.concurrency(w, n)
			}
		} else {
			s.o.cfg.Metrics.concurrency(nil, nil)
		}
		switch {
		case err != nil && ctx.Err() == nil:
			s.o.log.Warn("checkpoint scan", "err", err, "read", r.Read, "healed", r.Healed)
		case r.Healed > 0 || r.Submissions.Started > 0 || r.Submissions.Cleared > 0:
			s.o.log.Info("checkpoint scan healed stalled workflows", "read", r.Read, "examined", r.Examined, "healed", r.Healed,
				"submissions_started", r.Submissions.Started, "submissions_cleared", r.Submissions.Cleared)
		case r.Held:
			s.o.log.Debug("checkpoint scan", "read", r.Read, "examined", r.Examined, "cursor", r.Cursor)
		}
	}
}

// once runs one pass if this orchestrator holds (or may take) the lease.
func (s *scanner) once(ctx context.Context) (scanReport, error) {
	var r scanReport
	st, rev, ok, err := s.acquire(ctx)
	if err != nil || !ok {
		return r, err
	}
	r.Held = true
	revs, err := s.o.checkpoints.Revisions(ctx, st.Cursor+1, s.o.cfg.ScanBudget, time.Now().Add(-s.o.cfg.StepLease))
	if err != nil {
		return r, err
	}
	r.Read = len(revs)
	cursor := st.Cursor
	if len(revs) > 0 {
		cursor = revs[len(revs)-1].Revision
	}
	newest := map[string]bus.Stored{}
	for _, v := range revs {
		newest[v.Key] = v
	}
	candidates := make([]bus.Stored, 0, len(newest))
	for _, v := range newest {
		if !v.Deleted {
			candidates = append(candidates, v)
		}
	}
	slices.SortFunc(candidates, func(a, b bus.Stored) int { return cmp.Compare(a.Revision, b.Revision) })
	var errs []error
	for i, res := range s.lookAll(ctx, candidates) {
		if res.err != nil {
			// Look at it again next time, and at everything after it.
			errs = append(errs, res.err)
			cursor = candidates[i].Revision - 1
			break
		}
		if res.examined {
			r.Examined++
		}
		if res.healed {
			r.Healed++
		}
	}
	r.Cursor = cursor
	sub, err := s.o.reconcileSubmissions(ctx, time.Now())
	r.Submissions = sub
	if err != nil {
		errs = append(errs, err)
	}
	st.Cursor = cursor
	if _, _, err := s.lease.Renew(ctx, &st, rev); err != nil {
		errs = append(errs, err) // not held any more is no error: another took it over
	}
	return r, errors.Join(errs...)
}

// scanParallel is how many candidates a pass looks at at once.
const scanParallel = 16

// looked is what look found.
type looked struct {
	examined, healed bool
	err              error
}

// lookAll looks at every candidate, scanParallel at a time: each costs a
// read, and most of them nothing more.
func (s *scanner) lookAll(ctx context.Context, candidates []bus.Stored) []looked {
	results := make([]looked, len(candidates))
	sem := make(chan struct{}, scanParallel)
	var wg sync.WaitGroup
	for i, v := range candidates {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = s.look(ctx, v)
		}()
	}
	wg.Wait()
	return results
}

// look heals the workflow of a checkpoint revision if that revision is its
// newest (it has not changed for a lease) and it is active, or finished
// with its outbox not published.
func (s *scanner) look(ctx context.Context, v bus.Stored) looked {
	e, err := s.o.checkpoints.Get(ctx, v.Key)
	if isNotFound(err) {
		return looked{}
	}
	if err != nil {
		return looked{err: err}
	}
	if e.Revision != v.Revision {
		return looked{} // it moved on; its newer revision comes of age later
	}
	var cp wf.Checkpoint
	if wf.UnmarshalCheckpoint(e.Value, &cp) != nil {
		return looked{}
	}
	if cp.Status.Terminal() {
		var (
			healed bool
			err    error
		)
		if len(cp.Outbox) > 0 {
			// Its end was stored and not published: its orchestrator died
			// in between, and what ended it will not come again (a user's
			// cancel, a core NATS request, is not redelivered). Followers
			// would wait for its terminal event for ever.
			s.o.log.Warn("finished workflow: publishing its stranded outbox", "tenant", cp.TenantID, "workflow", cp.WorkflowID, "messages", len(cp.Outbox))
			healed, err = true, s.o.settle(ctx, cp.TenantID, cp.WorkflowID)
		}
		if err == nil && cp.Concurrency != nil {
			// Its release may have been lost to a crash: again (a no-op
			// if it was not), with holders that ended dropped.
			err = s.o.release(ctx, cp.TenantID, cp.WorkflowID, *cp.Concurrency, true)
		}
		return looked{examined: healed, healed: healed, err: err}
	}
	healed, err := s.o.heal(ctx, &cp)
	return looked{examined: true, healed: healed, err: err}
}

// acquire returns the lease's state if this orchestrator holds it, may
// create it, or may take it over from a holder that went silent.
func (s *scanner) acquire(ctx context.Context) (scanLease, uint64, bool, error) {
	var st scanLease
	rev, held, took, err := s.lease.Acquire(ctx, &st)
	if took {
		s.o.log.Info("checkpoint scan lease taken over from a silent holder", "cursor", st.Cursor)
	}
	return st, rev, held, err
}

// heal moves on an active workflow whose checkpoint has not changed for a
// lease, if something it waits for was lost, and re-arms the timers the
// server may have lost with it. It reports whether it needed a transition.
func (o *Orchestrator) heal(ctx context.Context, cp *wf.Checkpoint) (bool, error) {
	tenant, workflow := cp.TenantID, cp.WorkflowID
	if len(cp.Outbox) > 0 {
		o.log.Warn("stalled workflow: publishing its stranded outbox", "tenant", tenant, "workflow", workflow, "messages", len(cp.Outbox))
		return true, o.settle(ctx, tenant, workflow)
	}
	if cp.Deadline != nil {
		if !time.Now().Before(*cp.Deadline) {
			return true, o.expire(ctx, tenant, workflow)
		}
		m, err := wf.DeadlineTimer(cp, *cp.Deadline, time.Now())
		if err != nil {
			return false, err
		}
		if err := o.ensureTimer(ctx, cp, m); err != nil {
			return false, err
		}
	}
	if cp.Phase == wf.PhaseWaiting && cp.Concurrency != nil {
		return false, o.repairWaiting(ctx, cp)
	}
	if err := o.ensureWaitTimers(ctx, cp); err != nil {
		return false, err
	}
	healed := false
	for _, id := range working(cp) {
		t := cp.Tasks[id]
		if due, ok := o.leaseDue(t); ok && due.After(time.Now()) {
			// A step handed to a worker whose lease, counted from this
			// orchestrator's start, still runs (lease.go): its worker
			// may not have found an orchestrator to renew it with yet.
			continue
		}
		v, err := o.examine(ctx, cp, id, t.Attempt)
		if err != nil {
			return healed, err
		}
		if v == lost {
			healed = true
			if err := o.redispatch(ctx, tenant, workflow, id, t.Attempt); err != nil {
				return healed, err
			}
		}
	}
	if cp.Watch == 0 || o.cfg.StepLease <= 0 {
		return healed, nil
	}
	m, err := wf.WatchTimer(cp, cp.Watch, time.Now().Add(wf.FirstLook(o.cfg.StepLease)), time.Now())
	if err != nil {
		return healed, err
	}
	return healed, o.ensureTimer(ctx, cp, m)
}

// ensureWaitTimers re-arms the timers of the wait steps that wait, should
// the server have lost them.
func (o *Orchestrator) ensureWaitTimers(ctx context.Context, cp *wf.Checkpoint) error {
	for _, s := range cp.Plan.Steps {
		t := cp.Tasks[s.ID]
		if t == nil || t.Status != events.StateWorking || t.Wait == nil || t.Wait.At == nil {
			continue
		}
		m, err := wf.WaitTimer(cp, s.ID, t.Attempt, *t.Wait.At, time.Now())
		if err != nil {
			return err
		}
		if err := o.ensureTimer(ctx, cp, m); err != nil {
			return err
		}
	}
	return nil
}

// ensureTimer publishes a timer unless one is stored.
func (o *Orchestrator) ensureTimer(ctx context.Context, cp *wf.Checkpoint, m wf.Outgoing) error {
	if ok, err := o.hasTimer(ctx, m); ok || err != nil {
		return err
	}
	return o.sendTimer(ctx, cp, m)
}
