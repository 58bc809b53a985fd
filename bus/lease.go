package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// LeaseState is what a lease's value holds: its holder and when it last
// wrote it, beside whatever the holder keeps with them (a cursor). It is
// stored as JSON.
type LeaseState interface {
	// Holder is the owner written last.
	Holder() string
	// Hold makes owner the holder, as of at.
	Hold(owner string, at time.Time)
}

// Lease is a key of a KV bucket that one process among several holds at a
// time, to run what must run once (the checkpoint scan, the retention
// sweep). The holder renews it by writing it; another process takes it
// over once its revision has not moved for Silence on that process's own
// clock, so that clocks need not agree. A Lease is used by one goroutine.
type Lease struct {
	kv         *KV
	key, owner string
	silence    time.Duration
	// seenRev is the key's revision as last read, seenAt when this
	// process first saw it.
	seenRev uint64
	seenAt  time.Time
}

// NewLease returns owner's view of the lease at key in kv, taken over
// from a holder silent for silence.
func NewLease(kv *KV, key, owner string, silence time.Duration) *Lease {
	return &Lease{kv: kv, key: key, owner: owner, silence: silence}
}

// Acquire reads the lease into st and reports whether this process holds
// it — it did, it created it, or it took it over from a silent holder
// (takenOver) — with the revision to Renew from.
func (l *Lease) Acquire(ctx context.Context, st LeaseState) (rev uint64, held, takenOver bool, err error) {
	now := time.Now()
	e, err := l.kv.Get(ctx, l.key)
	if errors.Is(err, ErrNotFound) {
		st.Hold(l.owner, now.UTC())
		b, err := json.Marshal(st)
		if err != nil {
			return 0, false, false, fmt.Errorf("bus: lease %s: %w", l.key, err)
		}
		rev, err := l.kv.Create(ctx, l.key, b)
		if errors.Is(err, ErrConflict) {
			return 0, false, false, nil // another created it first
		}
		if err == nil {
			l.seenRev, l.seenAt = rev, now
		}
		return rev, err == nil, false, err
	}
	if err != nil {
		return 0, false, false, err
	}
	_ = json.Unmarshal(e.Value, st) // a corrupt value is a silent holder's
	if e.Revision != l.seenRev {
		l.seenRev, l.seenAt = e.Revision, now
	}
	if st.Holder() == l.owner {
		return e.Revision, true, false, nil
	}
	if now.Sub(l.seenAt) < l.silence {
		return 0, false, false, nil // its holder renews it
	}
	rev, held, err = l.Renew(ctx, st, e.Revision)
	return rev, held, held, err
}

// Renew writes st as this process's, if the lease is still at rev; it
// reports false, and no error, if another process wrote it since (took
// it over).
func (l *Lease) Renew(ctx context.Context, st LeaseState, rev uint64) (uint64, bool, error) {
	now := time.Now()
	st.Hold(l.owner, now.UTC())
	b, err := json.Marshal(st)
	if err != nil {
		return 0, false, fmt.Errorf("bus: lease %s: %w", l.key, err)
	}
	next, err := l.kv.Update(ctx, l.key, b, rev)
	if errors.Is(err, ErrConflict) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	l.seenRev, l.seenAt = next, now
	return next, true, nil
}
