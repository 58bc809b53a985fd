package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/sessions"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// Config configures a Sweeper. Bus is required; the zero value of every
// other field means its default.
type Config struct {
	Bus *bus.Bus
	// Policy says how long ended workflows are kept.
	Policy Policy
	// Sessions is the store whose turns of purged workflows are
	// forgotten; default one on Bus with the package's defaults.
	Sessions *sessions.Store
	// Interval is how often the lease holder sweeps; default 1m.
	Interval time.Duration
	// MaxPerPass bounds one pass: how many ended workflows, found due, it
	// looks at (reads and, if still due, purges); the next pass goes on
	// from there. Default 1000.
	MaxPerPass int
	// ReadBudget bounds how many checkpoint revisions one cursor reads in
	// one pass (headers only); default 20000.
	ReadBudget int
	Logger     *slog.Logger
	// Metrics, when set, counts purges and passes (metrics.go).
	Metrics *Metrics
	// Now is the clock that says what is due; default time.Now. The
	// lease's silence is timed on the real clock.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.Interval == 0 {
		c.Interval = time.Minute
	}
	if c.MaxPerPass == 0 {
		c.MaxPerPass = 1000
	}
	if c.ReadBudget == 0 {
		c.ReadBudget = 20000
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Bus == nil {
		errs = append(errs, errors.New("retention: config needs Bus"))
	}
	if c.Interval <= 0 || c.MaxPerPass < 1 || c.ReadBudget < 1 {
		errs = append(errs, fmt.Errorf("retention: interval %s, max per pass %d and read budget %d must be positive", c.Interval, c.MaxPerPass, c.ReadBudget))
	}
	errs = append(errs, c.Policy.Validate())
	return errors.Join(errs...)
}

// lease is the value of the sweep's lease key: its holder, and how far
// each period's cursor has read the checkpoint bucket's stream, good for
// the policy named by Policy only.
type lease struct {
	Owner   string            `json:"owner"`
	Policy  string            `json:"policy"`
	Cursors map[string]uint64 `json:"cursors"`
	At      time.Time         `json:"at"`
}

// Report says what one pass did.
type Report struct {
	// Held says this sweeper held the lease and swept.
	Held bool
	// Read counts the checkpoint revisions read, Looked the ended
	// workflows looked at, Purged those purged.
	Read, Looked, Purged int
	// More says the pass stopped at a bound with more to read.
	More bool
}

// Sweeper purges ended workflows whose retention has passed. Run it in
// every orchestrator: one at a time sweeps. Its methods are meant for one
// goroutine (Run's); the Purger it holds is safe for concurrent use.
type Sweeper struct {
	cfg         Config
	log         *slog.Logger
	purger      *Purger
	checkpoints *bus.KV
	lease       *bus.Lease
}

// New checks cfg and opens the buckets the sweep needs.
func New(ctx context.Context, cfg Config) (*Sweeper, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p, err := NewPurger(ctx, cfg.Bus, cfg.Sessions)
	if err != nil {
		return nil, err
	}
	leases, err := cfg.Bus.Leases(ctx)
	if err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	return &Sweeper{cfg: cfg, log: cfg.Logger.With("component", "retention"), purger: p, checkpoints: p.checkpoints,
		lease: bus.NewLease(leases, subjects.LeaseRetention, uuid.NewString(), 3*cfg.Interval)}, nil
}

// Purger is the sweep's purger, for purges asked for by hand.
func (s *Sweeper) Purger() *Purger { return s.purger }

// Run sweeps every Interval until ctx ends; it returns nil then.
func (s *Sweeper) Run(ctx context.Context) error {
	if len(s.cfg.Policy.periods()) == 0 {
		s.log.Info("retention: every ended workflow is kept forever; no sweep")
		return nil
	}
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		r, err := s.Once(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("retention sweep", "err", err, "read", r.Read, "purged", r.Purged)
		case r.Purged > 0:
			s.log.Info("retention sweep purged ended workflows", "purged", r.Purged, "read", r.Read, "more", r.More)
		}
	}
}

// Once runs one pass if this sweeper holds (or may take) the lease.
func (s *Sweeper) Once(ctx context.Context) (Report, error) {
	var r Report
	st, rev, ok, err := s.acquire(ctx)
	if err != nil || !ok {
		return r, err
	}
	r.Held = true
	start := time.Now()
	fp := s.cfg.Policy.fingerprint()
	if st.Policy != fp {
		// Another policy's cursors passed workflows this one may purge.
		st.Policy, st.Cursors = fp, nil
	}
	cursors := map[string]uint64{}
	var errs []error
	budget := s.cfg.MaxPerPass
	now := s.cfg.Now()
	for _, d := range s.cfg.Policy.periods() {
		name := strconv.FormatInt(int64(d), 10)
		next, err := s.sweep(ctx, d, st.Cursors[name], now, &budget, &r)
		cursors[name] = next
		if err != nil {
			errs = append(errs, err)
		}
	}
	st.Cursors = cursors
	if _, _, err := s.lease.Renew(ctx, &st, rev); err != nil {
		errs = append(errs, err) // not held any more is no error: another took it over
	}
	err = errors.Join(errs...)
	s.cfg.Metrics.passed(time.Since(start).Seconds(), err != nil)
	return r, err
}

// sweep moves period d's cursor over the revisions written more than d
// before now, purging each workflow whose newest revision it is, that has
// ended and whose period is d; it returns where the cursor stops.
func (s *Sweeper) sweep(ctx context.Context, d time.Duration, cursor uint64, now time.Time, budget *int, r *Report) (uint64, error) {
	revs, err := s.checkpoints.Revisions(ctx, cursor+1, s.cfg.ReadBudget, now.Add(-d))
	if err != nil {
		return cursor, err
	}
	r.Read += len(revs)
	if len(revs) == s.cfg.ReadBudget {
		r.More = true
	}
	next := cursor
	if len(revs) > 0 {
		next = revs[len(revs)-1].Revision
	}
	newest := map[string]bus.Stored{}
	for _, v := range revs {
		newest[v.Key] = v
	}
	candidates := make([]bus.Stored, 0, len(newest))
	for _, v := range newest {
		candidates = append(candidates, v)
	}
	slices.SortFunc(candidates, func(a, b bus.Stored) int { return cmp.Compare(a.Revision, b.Revision) })
	if len(candidates) > *budget {
		next, r.More = candidates[*budget].Revision-1, true
		candidates = candidates[:*budget]
	}
	*budget -= len(candidates)
	for i, res := range s.lookAll(ctx, candidates, d) {
		if res.err != nil {
			// Look at it again next time, and at everything after it.
			return candidates[i].Revision - 1, res.err
		}
		if res.looked {
			r.Looked++
		}
		if res.purged {
			r.Purged++
		}
	}
	return next, nil
}

// sweepParallel is how many candidates a pass looks at at once.
const sweepParallel = 8

type looked struct {
	looked, purged bool
	err            error
}

func (s *Sweeper) lookAll(ctx context.Context, candidates []bus.Stored, d time.Duration) []looked {
	results := make([]looked, len(candidates))
	sem := make(chan struct{}, sweepParallel)
	var wg sync.WaitGroup
	for i, v := range candidates {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = s.look(ctx, v, d)
		})
	}
	wg.Wait()
	return results
}

// look purges the workflow of a revision read by period d's cursor if
// that revision is still its newest, it has ended and its period is d; a
// deleted checkpoint whose revisions remain is a purge that stopped half
// way, finished now.
func (s *Sweeper) look(ctx context.Context, v bus.Stored, d time.Duration) looked {
	e, err := s.checkpoints.Get(ctx, v.Key)
	switch {
	case errors.Is(err, bus.ErrNotFound) && v.Deleted:
		p, err := s.purger.finish(ctx, v.Key)
		if errors.Is(err, ErrNotFound) {
			return looked{}
		}
		return s.done(p, err)
	case errors.Is(err, bus.ErrNotFound):
		return looked{}
	case err != nil:
		return looked{err: err}
	case e.Revision != v.Revision:
		return looked{} // it moved on; its newer revision comes of age later
	}
	var cp workflow.Checkpoint
	if workflow.UnmarshalCheckpoint(e.Value, &cp) != nil {
		return looked{}
	}
	if p, ok := s.cfg.Policy.For(cp.TenantID, cp.Status); !ok || p != d {
		return looked{} // running, kept forever, or another cursor's
	}
	p, err := s.purger.purgeAt(ctx, v.Key, e)
	if errors.Is(err, bus.ErrConflict) || errors.Is(err, ErrRunning) {
		return looked{looked: true} // written meanwhile (a resume)
	}
	return s.done(p, err)
}

func (s *Sweeper) done(p Purged, err error) looked {
	if err != nil {
		return looked{looked: true, err: err}
	}
	s.cfg.Metrics.purgedOne(p)
	return looked{looked: true, purged: true}
}

// Holder and Hold make lease a bus.LeaseState.
func (l *lease) Holder() string { return l.Owner }

func (l *lease) Hold(owner string, at time.Time) { l.Owner, l.At = owner, at }

// acquire returns the lease's state if this sweeper holds it, may create
// it, or may take it over from a holder silent for three intervals on
// this process's clock (so that clocks need not agree).
func (s *Sweeper) acquire(ctx context.Context) (lease, uint64, bool, error) {
	var st lease
	rev, held, took, err := s.lease.Acquire(ctx, &st)
	if took {
		s.log.Info("retention sweep lease taken over from a silent holder")
	}
	return st, rev, held, err
}
