package orchestrator

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// Flow control: tenants share a busy capability fairly.
//
// Every capability has one durable step consumer that all tenants' steps
// enter in arrival order (workers in any language bind to it, and a
// work-queue stream allows no second consumer over the same subjects), so
// fairness cannot be had by reordering that queue: it is had by keeping it
// short. When a capability is busy — as many requests wait in
// AGENTBUS_STEPS for a worker as the workers have slots (the consumer
// counts both; at least minWindow), or steps already wait for admission —
// the engine sends a new step request to the tenant's queue of the
// capability, agentbus.<tenant>.queue.<capability>.<priority> in
// AGENTBUS_QUEUE (workflow.Policy.Park), instead of to the step subject.
// The step is working and leased from its dispatch either way; the
// watchdog looks for it in the queue too (lease.go). One orchestrator per
// capability (a lease in AGENTBUS_LEASES) runs the capability's
// admission: whenever fewer requests wait than that, it takes the next
// request — of the tenant furthest behind its weighted share (virtual
// time: each admission advances its tenant's clock by 1/weight; a tenant
// that had nothing waiting joins at the front's clock, so no credit is
// hoarded), within it of the highest priority, every agingEvery-th
// admission of a tenant going to its lowest priority instead so that none
// starves — and publishes it as it is (dedup key and all) on its step
// subject, then removes it from the queue (bus.Admit). No checkpoint is
// written. A tenant alone gets every slot: the admission never holds a
// step while a slot is free. A capability that is not busy costs nothing:
// its steps are dispatched at once, as before.

// agingEvery is how often (in admissions of one tenant) the lowest
// priority waiting is admitted instead of the highest.
const agingEvery = 4

// minWindow is how many requests may wait in AGENTBUS_STEPS when the
// consumer counts fewer worker slots (none, before a worker has pulled).
const minWindow = 2

// admission is an orchestrator's part in flow control: the load probes that
// decide whether a step is parked, and the admission loops of the
// capabilities whose lease it holds.
type admission struct {
	o  *Orchestrator
	id string

	mu     sync.Mutex
	probes map[string]*probe
	clock  map[string]map[string]float64 // capability → tenant → virtual time
	turns  map[string]int                // tenant/capability → admissions
	leases map[string]*admitLease        // capability → lease state
	// buckets are the rate limits' token buckets, by tenant/capability;
	// throttled the requests whose followers were told they wait.
	buckets   map[string]*bucket
	throttled map[string]bool
	wake      chan struct{}
	// waiting is set while the last round found steps waiting.
	waiting atomic.Bool
	// seen is when each tenant last had steps waiting for a capability
	// (capability → tenant → time): the admission's own record of
	// contention (contended).
	seen map[string]map[string]time.Time
}

// probe is a capability's load as last read, with this orchestrator's
// requests since: reserved counts the transitions under way that found
// the capability free (each may send it a request), recent the requests
// it sent to the step subject since the load was asked for, less the
// replies of the capability's steps it recorded meanwhile (each was a
// request taken off the subject).
type probe struct {
	at               time.Time
	load             bus.Load
	bound            bool // a worker has made the capability's consumer
	queued           uint64
	reserved, recent int
	refreshing       bool
}

// ahead is how many requests wait for the capability's workers, as far as
// this orchestrator can tell.
func (p *probe) ahead() int { return max(int(p.load.Pending)+p.recent, 0) + p.reserved }

func newAdmission(o *Orchestrator) *admission {
	return &admission{o: o, id: uuid.NewString(), probes: map[string]*probe{}, clock: map[string]map[string]float64{},
		turns: map[string]int{}, leases: map[string]*admitLease{}, buckets: map[string]*bucket{}, throttled: map[string]bool{},
		seen: map[string]map[string]time.Time{}, wake: make(chan struct{}, 1)}
}

// probeTTL is how long a capability's load is reused before it is read
// again (in the background: a dispatch never waits for it).
const probeTTL = 20 * time.Millisecond

// idleProbeTTL is probeTTL for a capability far from busy (nothing
// queued, less than half its window ahead): reading its load 50 times a
// second per orchestrator cost a one-step workflow a tenth of its speed,
// and this orchestrator's own requests since the last reading are counted
// meanwhile (reserved, recent), so a burst still parks in time.
const idleProbeTTL = 250 * time.Millisecond

// freed wakes the admission loop when a step finished while steps wait.
func (f *admission) freed() {
	if f != nil && f.waiting.Load() {
		f.nudge()
	}
}

// window is how many requests may wait in AGENTBUS_STEPS for a
// capability: Config.FlowWindow per worker slot (at least minWindow). A
// step admitted waits for about that many rounds of the workers: a smaller
// window is fairer to a tenant arriving behind another's backlog, a larger
// one parks less of a saturated capability's work, which is cheaper.
// BenchmarkNoisyNeighbour put the quiet tenant's p95 at 1.7× alone with
// 0.5, 2.4× with 1 (the default) and 3.5× with 2; 0.5 cost 30 % of
// BenchmarkWorkflowsParallel's echo steps/s, 1 cost 6 %.
func (f *admission) window(l bus.Load) int {
	return max(int(float64(l.Slots())*f.o.cfg.FlowWindow), minWindow)
}

// contendedFor is how long a capability counts as contended after a
// second tenant had steps waiting for it.
const contendedFor = 2 * time.Second

// admitWindow is the window the admission fills: half the window while
// the capability is contended — two tenants or more had steps waiting for
// it in the last contendedFor — so that a tenant arriving behind another's
// backlog waits behind half as many requests, and the whole window
// otherwise, so that a tenant alone parks no more of its work than the
// window says. BenchmarkNoisyNeighbour (one worker, 8 slots, 2,000 queued)
// put the quiet tenant's p95 at 2.4× alone with the whole window and
// about what a window of half gives with this (1.7–1.8×), while a
// saturating tenant alone keeps the throughput of the whole window.
func (f *admission) admitWindow(capability string, l bus.Load, tenants []string, now time.Time) int {
	f.mu.Lock()
	seen := f.seen[capability]
	if seen == nil {
		seen = map[string]time.Time{}
		f.seen[capability] = seen
	}
	for _, t := range tenants {
		seen[t] = now
	}
	recent := 0
	for t, at := range seen {
		if now.Sub(at) > contendedFor {
			delete(seen, t)
			continue
		}
		recent++
	}
	f.mu.Unlock()
	w := f.window(l)
	if recent >= 2 {
		w = max(w/2, minWindow)
	}
	return w
}

// park lists, among the capabilities of a workflow's plan (and their
// fallbacks), those whose ready steps must wait for admission now, and
// reserves a request on each of the others: the transition's effects
// settle the reservation (settle). A reply's transition names its step's
// capability as freed: the reply frees the slot its next step would take,
// so that one is neither reserved nor counted against the window.
func (f *admission) park(tenant string, plan events.Plan, freed string) (busy map[string]bool, reserved []string) {
	if f == nil {
		return nil, nil
	}
	mark := func(c string) {
		if busy == nil {
			busy = map[string]bool{}
		}
		busy[c] = true
	}
	seen := map[string]bool{}
	for _, s := range plan.Steps {
		for _, c := range []string{s.Capability, s.Fallback} {
			if c == "" || seen[c] || c == workflow.CapabilityWait { // the engine runs wait steps
				continue
			}
			if f.o.limited(tenant, c) {
				seen[c] = true
				mark(c) // a limited tenant's steps always pass the admission
				continue
			}
			if c == freed {
				seen[c] = true
				if f.busy(c, true) {
					if busy == nil {
						busy = map[string]bool{}
					}
					busy[c] = true
				}
				continue
			}
			seen[c] = true
			if f.busy(c, c == freed) {
				if busy == nil {
					busy = map[string]bool{}
				}
				busy[c] = true
			} else {
				reserved = append(reserved, c)
			}
		}
	}
	return busy, reserved
}

// settle ends a transition's reservations: the requests it sent to step
// subjects (none if it was not stored) count as recent.
func (f *admission) settle(reserved []string, eff *workflow.Effects) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range reserved {
		if p := f.probes[c]; p != nil {
			p.reserved--
		}
	}
	if eff == nil {
		return
	}
	f.count(eff)
}

// count notes what a transition did to its capabilities' step subjects:
// requests sent, and replies recorded. The caller holds f.mu.
func (f *admission) count(eff *workflow.Effects) {
	for _, d := range eff.Dispatches {
		if p := f.probes[d.Capability]; p != nil && !d.Parked {
			p.recent++
		}
	}
	for _, tr := range eff.Transitions {
		if p := f.probes[tr.Capability]; p != nil && tr.StepID != "" && tr.Cause == workflow.CauseReply {
			p.recent--
		}
	}
}

// busy reports whether a capability's steps must wait for admission, from
// its last probe, reserving a request when it is not; it reads the load
// again in the background when it is old. A capability no worker has
// bound to is never busy: there is no one to be fair to yet.
func (f *admission) busy(capability string, freed bool) bool {
	f.mu.Lock()
	p := f.probes[capability]
	if p == nil {
		// The first look at a capability waits for its load: a burst of
		// dispatches must not all pass before the first probe is back.
		// Meanwhile it counts as bound with no slot.
		f.probes[capability] = &probe{refreshing: true, bound: true}
		f.mu.Unlock()
		f.refresh(capability)
		f.mu.Lock()
		p = f.probes[capability]
	}
	ttl := probeTTL
	if p.queued == 0 && 2*p.ahead() < f.window(p.load) {
		ttl = idleProbeTTL
	}
	stale := time.Since(p.at) > ttl && !p.refreshing
	if stale {
		p.refreshing = true
	}
	credit := 0
	if freed {
		credit = 1
	}
	busy := p.queued > 0 || p.bound && p.ahead()-credit >= f.window(p.load)
	if !busy && !freed {
		p.reserved++
	}
	f.mu.Unlock()
	if stale {
		go f.refresh(capability)
	}
	return busy
}

func (f *admission) refresh(capability string) {
	ctx, cancel := context.WithTimeout(f.o.backgroundCtx, 2*time.Second)
	defer cancel()
	f.mu.Lock()
	recent := f.probes[capability].recent
	f.mu.Unlock()
	load, err := f.o.bus.CapabilityLoad(ctx, capability)
	bound := err == nil
	if err != nil && !isNotFound(err) {
		f.done(capability, nil, 0)
		return
	}
	var queued uint64
	filter, _ := subjects.QueueFilter(capability)
	ws, err := f.o.bus.QueuedSteps(ctx, filter)
	if err != nil {
		f.done(capability, nil, 0)
		return
	}
	for _, w := range ws {
		queued += w.Count
	}
	f.done(capability, &probe{at: time.Now(), load: load, bound: bound, queued: queued}, recent)
}

// done installs a probe's reading; the requests sent before it was asked
// for are in its load now.
func (f *admission) done(capability string, p *probe, counted int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.probes[capability]
	if p == nil {
		old.refreshing = false
		return
	}
	p.reserved, p.recent = old.reserved, old.recent-counted
	f.probes[capability] = p
}

// nudge wakes the admission loop: a step was queued, or (while steps
// wait) one finished and freed a slot.
func (f *admission) nudge() {
	if f == nil {
		return
	}
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// run admits waiting steps until ctx ends: promptly while steps wait,
// now and then when none does.
func (f *admission) run(ctx context.Context) {
	const active, idle = 10 * time.Millisecond, 100 * time.Millisecond
	wait := idle
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-time.After(wait):
		}
		n, err := f.round(ctx)
		if err != nil && ctx.Err() == nil {
			f.o.log.Debug("admission round", "err", err)
		}
		f.waiting.Store(n > 0)
		wait = idle
		if n > 0 {
			wait = active
		}
	}
}

// round runs one admission pass over every capability with steps waiting
// whose lease this orchestrator holds, and returns how many steps wait.
func (f *admission) round(ctx context.Context) (int, error) {
	ws, err := f.o.bus.QueuedSteps(ctx, subjects.AllQueued)
	if err != nil {
		return 0, err
	}
	byCap := map[string][]bus.Waiting{}
	total := 0
	for _, w := range ws {
		byCap[w.Capability] = append(byCap[w.Capability], w)
		total += int(w.Count)
	}
	f.o.cfg.Metrics.queued(ws)
	var errs []error
	for c, ws := range byCap {
		held, err := f.lease(ctx, c)
		if err != nil || !held {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, f.admit(ctx, c, ws))
	}
	return total, errors.Join(errs...)
}

// admit admits as many waiting steps of a capability as its workers have
// free slots for, in weighted fair order.
func (f *admission) admit(ctx context.Context, capability string, ws []bus.Waiting) error {
	load, err := f.o.bus.CapabilityLoad(ctx, capability)
	if err != nil && !isNotFound(err) {
		return err
	}
	// waiting counts by tenant and priority.
	waiting := map[string]*[6]uint64{}
	var tenants []string
	for _, w := range ws {
		if waiting[w.Tenant] == nil {
			waiting[w.Tenant] = &[6]uint64{}
			tenants = append(tenants, w.Tenant)
		}
		waiting[w.Tenant][w.Priority] += w.Count
	}
	now := time.Now()
	free := f.admitWindow(capability, load, tenants, now) - int(load.Pending)
	if isNotFound(err) {
		free = 1 << 20 // no worker has bound: nobody to be fair to, nothing held back
	}
	var inFlight map[string]uint64
	for t := range waiting {
		if f.o.limited(t, capability) {
			if inFlight, err = f.o.bus.StepCounts(ctx, capability); err != nil {
				return err
			}
			break
		}
	}
	// Decide the round first, one admission at a time in fair order;
	// then take each queue's share in one fetch and move them all with
	// one wait for their acknowledgements.
	type queue struct {
		tenant string
		prio   int
	}
	var order []queue
	share := map[queue]int{}
	for free > 0 && len(waiting) > 0 {
		tenant := f.next(capability, waiting)
		prio := f.priority(tenant, capability, waiting[tenant])
		if ok, why, until := f.check(tenant, capability, inFlight[tenant], now); !ok {
			// Over its limit: its steps wait; the one at the head is told
			// so, once. Others share the free slots meanwhile.
			f.throttle(ctx, tenant, capability, prio, why, until)
			delete(waiting, tenant)
			continue
		}
		q := queue{tenant, prio}
		if share[q] == 0 {
			order = append(order, q)
		}
		share[q]++
		f.drop(waiting, tenant, prio, false)
		free--
		if inFlight != nil {
			inFlight[tenant]++
		}
		f.advance(capability, tenant)
	}
	var taken []*bus.QueuedStep
	for _, q := range order {
		qs, err := f.o.bus.TakeQueued(ctx, q.tenant, capability, q.prio, share[q], f.o.cfg.AckWait)
		if short := share[q] - len(qs); short > 0 {
			f.o.tokens.release(q.tenant, capability, short) // decided, not taken
		}
		if err != nil && !errors.Is(err, bus.ErrNotFound) {
			return errors.Join(err, f.o.bus.Admit(ctx, taken))
		}
		taken = append(taken, qs...)
	}
	if err := f.o.bus.Admit(ctx, taken); err != nil {
		return err
	}
	for _, q := range taken {
		f.o.cfg.Metrics.admitted(q.Tenant, capability, now.Sub(q.At))
	}
	return nil
}

// drop counts one step of a tenant's priority gone (all of them, when the
// queue was found empty).
func (f *admission) drop(waiting map[string]*[6]uint64, tenant string, prio int, all bool) {
	c := waiting[tenant]
	if all || c[prio] <= 1 {
		c[prio] = 0
	} else {
		c[prio]--
	}
	for _, n := range c {
		if n > 0 {
			return
		}
	}
	delete(waiting, tenant)
}

// next picks the tenant furthest behind its weighted share among those
// with steps waiting; one that had none joins at the front's clock.
func (f *admission) next(capability string, waiting map[string]*[6]uint64) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	clock := f.clock[capability]
	if clock == nil {
		clock = map[string]float64{}
		f.clock[capability] = clock
	}
	front := math.Inf(1)
	for t := range waiting {
		if v, ok := clock[t]; ok {
			front = min(front, v)
		}
	}
	if math.IsInf(front, 1) {
		front = 0
	}
	tenants := make([]string, 0, len(waiting))
	for t := range waiting {
		if v, ok := clock[t]; !ok || v < front {
			clock[t] = front
		}
		tenants = append(tenants, t)
	}
	slices.Sort(tenants) // ties go by name, so that a round is deterministic
	best := tenants[0]
	for _, t := range tenants[1:] {
		if clock[t] < clock[best] {
			best = t
		}
	}
	return best
}

// advance moves a tenant's clock on by one admission over its weight.
func (f *admission) advance(capability, tenant string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock[capability][tenant] += 1 / float64(f.o.weight(tenant))
	f.turns[tenant+"/"+capability]++
}

// priority picks which of a tenant's priorities is admitted next: the
// highest waiting, except every agingEvery-th admission, which goes to the
// lowest waiting.
func (f *admission) priority(tenant, capability string, c *[6]uint64) int {
	f.mu.Lock()
	turn := f.turns[tenant+"/"+capability]
	f.mu.Unlock()
	hi, lo := 0, 0
	for p := events.PriorityHighest; p >= events.PriorityLowest; p-- {
		if c[p] > 0 {
			if hi == 0 {
				hi = p
			}
			lo = p
		}
	}
	if turn%agingEvery == agingEvery-1 {
		return lo
	}
	return hi
}

// weight is a tenant's share of a busy capability (1 unless configured).
func (o *Orchestrator) weight(tenant string) int {
	if w := o.cfg.TenantWeights[tenant]; w > 0 {
		return w
	}
	return 1
}

// admitLease is this orchestrator's view of a capability's admission
// lease: whether it holds it and when it last renewed it, or the holder's
// revision and when this orchestrator first saw it (a lease whose
// revision has not moved for leaseSilence is taken over).
type admitLease struct {
	held      bool
	renewedAt time.Time
	seenRev   uint64
	seenAt    time.Time
}

// leaseRenew is how often a held admission lease is renewed; leaseSilence
// how long another's may stay unrenewed before it is taken over.
const (
	leaseRenew   = time.Second
	leaseSilence = 5 * time.Second
)

// lease reports whether this orchestrator holds (or has just taken) the
// admission lease of a capability.
func (f *admission) lease(ctx context.Context, capability string) (bool, error) {
	f.mu.Lock()
	l := f.leases[capability]
	if l == nil {
		l = &admitLease{}
		f.leases[capability] = l
	}
	f.mu.Unlock()
	now := time.Now()
	if l.held && now.Sub(l.renewedAt) < leaseRenew {
		return true, nil
	}
	key := subjects.LeaseAdmitPrefix + capability
	kv := f.o.leases
	e, err := kv.Get(ctx, key)
	if isNotFound(err) {
		_, err := kv.Create(ctx, key, []byte(f.id))
		if errors.Is(err, bus.ErrConflict) {
			return false, nil
		}
		l.held, l.renewedAt = err == nil, now
		return l.held, err
	}
	if err != nil {
		return false, err
	}
	if string(e.Value) != f.id {
		l.held = false
		if e.Revision != l.seenRev {
			l.seenRev, l.seenAt = e.Revision, now
		}
		if now.Sub(l.seenAt) < leaseSilence {
			return false, nil // its holder renews it
		}
	}
	_, err = kv.Update(ctx, key, []byte(f.id), e.Revision)
	if errors.Is(err, bus.ErrConflict) {
		l.held = false
		return false, nil
	}
	if err == nil && !l.held && string(e.Value) != f.id {
		f.o.log.Info("admission lease taken over from a silent holder", "capability", capability)
	}
	l.held, l.renewedAt = err == nil, now
	return l.held, err
}

// throttle tells the followers of the step at the head of a tenant's queue
// that it waits for the tenant's limit, once per request: it takes the
// request, applies workflow.Throttled to its workflow, and puts it back.
func (f *admission) throttle(ctx context.Context, tenant, capability string, prio int, why string, until time.Time) {
	qs, err := f.o.bus.TakeQueued(ctx, tenant, capability, prio, 1, f.o.cfg.AckWait)
	if err != nil {
		return
	}
	q := qs[0]
	defer func() { _ = q.Nak(0) }()
	f.mu.Lock()
	seen := f.throttled[q.MsgID]
	f.throttled[q.MsgID] = true
	if len(f.throttled) > 100_000 { // bounded: forgetting only repeats a note
		clear(f.throttled)
	}
	f.mu.Unlock()
	if seen {
		return
	}
	// The request's dedup key is events.StepKey: tenant/workflow/step/attempt.
	parts := strings.Split(q.MsgID, "/")
	if len(parts) != 4 {
		return
	}
	attempt, err := strconv.Atoi(parts[3])
	if err != nil {
		return
	}
	if _, err := f.o.apply(ctx, tenant, parts[1], workflow.Throttled{StepID: parts[2], Attempt: attempt, Until: until, Reason: why}); err != nil && !isNotFound(err) {
		f.o.log.Debug("throttled note", "workflow", parts[1], "step", parts[2], "err", err)
	}
	f.o.cfg.Metrics.throttledStep(tenant, capability)
}

// idle reports whether nothing waited for a capability's workers at its
// last probe: a step handed straight to a worker (eager.go) then
// overtakes no other.
func (f *admission) idle(capability string) bool {
	if f == nil {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.probes[capability]
	return p != nil && !p.at.IsZero() && p.queued == 0 && p.load.Pending == 0
}
