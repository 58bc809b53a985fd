package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
)

// testLease is a LeaseState with a cursor its holder keeps.
type testLease struct {
	Owner  string    `json:"owner"`
	At     time.Time `json:"at"`
	Cursor int       `json:"cursor"`
}

func (l *testLease) Holder() string { return l.Owner }

func (l *testLease) Hold(owner string, at time.Time) { l.Owner, l.At = owner, at }

// TestLease: one holder at a time; the holder renews it and keeps its
// cursor; another takes it over, cursor and all, once it has not moved
// for the silence; the former holder's renewal then fails without error.
func TestLease(t *testing.T) {
	env := bustest.New(t)
	ctx := context.Background()
	kv, err := env.Bus.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := bus.NewLease(kv, "test-lease", "a", time.Hour)
	b := bus.NewLease(kv, "test-lease", "b", time.Hour)
	var st testLease
	rev, held, took, err := a.Acquire(ctx, &st)
	if err != nil || !held || took || st.Owner != "a" {
		t.Fatalf("a first: rev %d held %v took %v %+v %v", rev, held, took, st, err)
	}
	st.Cursor = 7
	if rev, held, err = a.Renew(ctx, &st, rev); err != nil || !held {
		t.Fatalf("a renews: %v %v", held, err)
	}
	var bs testLease
	if _, held, _, err := b.Acquire(ctx, &bs); err != nil || held || bs.Owner != "a" || bs.Cursor != 7 {
		t.Fatalf("b while a holds it: held %v %+v %v", held, bs, err)
	}
	// b waits no longer: a has been silent long enough.
	b = bus.NewLease(kv, "test-lease", "b", 0)
	brev, held, took, err := b.Acquire(ctx, &bs)
	if err != nil || !held || !took || bs.Owner != "b" || bs.Cursor != 7 {
		t.Fatalf("b takes over: held %v took %v %+v %v", held, took, bs, err)
	}
	if _, held, err := a.Renew(ctx, &st, rev); err != nil || held {
		t.Fatalf("a renews after the takeover: held %v %v, want false and no error", held, err)
	}
	if _, held, _, err := a.Acquire(ctx, &st); err != nil || held {
		t.Fatalf("a asks again: held %v %v", held, err)
	}
	if _, held, err := b.Renew(ctx, &bs, brev); err != nil || !held {
		t.Fatalf("b renews: %v %v", held, err)
	}
}
