package bus_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

func timerEnv(t *testing.T, tenant, workflow string) (*bustest.Env, string, string) {
	t.Helper()
	env := bustest.New(t)
	if err := env.Bus.EnsureTimers(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := env.Bus.EnsureTimers(testCtx(t)); err != nil {
		t.Fatalf("EnsureTimers is not idempotent: %v", err)
	}
	timer, _ := subjects.Timer(tenant, workflow)
	watch, _ := subjects.Watch(tenant, workflow)
	return env, timer, watch
}

func timerMsg(t *testing.T, subject, id string) bus.Pending {
	t.Helper()
	env, err := events.New(events.TypeDeadline, id, events.SourceOrchestrator, tenant, "w1", "", events.Deadline{At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return bus.Pending{Subject: subject, MsgID: id, Env: env}
}

// A scheduled message waits in the stream, replaced by the next one on its
// subject, and is published on its target when due, without its dedup key;
// ConsumeTimers delivers it then, and only then.
func TestScheduledTimerFiresOnItsTarget(t *testing.T) {
	env, timer, watch := timerEnv(t, tenant, "w1")
	ctx := testCtx(t)
	got := make(chan *bus.Delivery, 4)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- env.Bus.ConsumeTimers(cctx, bus.ConsumeConfig{Stream: subjects.StreamTimers, Durable: "test-timers", Filter: subjects.AllTimers},
			func(_ context.Context, d *bus.Delivery) error { got <- d; return nil })
	}()
	defer func() { cancel(); <-done }()

	later := bus.Message{Pending: timerMsg(t, watch, "later"), At: time.Now().Add(time.Hour), Target: timer}
	soon := bus.Message{Pending: timerMsg(t, watch, "soon"), At: time.Now().Add(time.Second), Target: timer}
	acks, err := env.Bus.PublishAll(ctx, []bus.Message{later, soon})
	if err != nil || len(acks) != 2 || acks[1].Sequence <= acks[0].Sequence {
		t.Fatalf("PublishAll = %+v, %v", acks, err)
	}
	start := time.Now()
	d := recv(t, got, "the scheduled timer")
	if d.Subject != timer || d.Envelope.ID != "soon" || time.Since(start) > 3*time.Second {
		t.Fatalf("fired %s %q after %s; want %s %q within about a second", d.Subject, d.Envelope.ID, time.Since(start), timer, "soon")
	}
	// The later schedule was replaced (one per subject), and the fired copy
	// carries no dedup key: nothing is left to find.
	found, complete, err := env.Bus.FindMsgID(ctx, subjects.StreamTimers, watch, func(string) bool { return true }, 10)
	if err != nil || found || !complete {
		t.Fatalf("after firing, a schedule is still stored: found=%v complete=%v err=%v", found, complete, err)
	}
}

// StoredMsgID names what is stored at a sequence until it is gone, and
// FindMsgID reads no further than its limit.
func TestStoredMsgIDAndFindMsgID(t *testing.T) {
	env, timer, _ := timerEnv(t, tenant, "w1")
	ctx := testCtx(t)
	var msgs []bus.Message
	for i := range 5 {
		msgs = append(msgs, bus.Message{Pending: timerMsg(t, timer, fmt.Sprintf("id-%d", i))})
	}
	acks, err := env.Bus.PublishAll(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := env.Bus.StoredMsgID(ctx, subjects.StreamTimers, acks[2].Sequence); err != nil || id != "id-2" {
		t.Fatalf("StoredMsgID = %q, %v; want id-2", id, err)
	}
	s, err := env.Bus.JetStream().Stream(ctx, subjects.StreamTimers)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, acks[2].Sequence); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Bus.StoredMsgID(ctx, subjects.StreamTimers, acks[2].Sequence); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("StoredMsgID of a deleted message = %v, want ErrNotFound", err)
	}
	is := func(want string) func(string) bool { return func(id string) bool { return id == want } }
	for _, tc := range []struct {
		id              string
		limit           int
		found, complete bool
	}{
		{"id-4", 10, true, true}, {"id-2", 10, false, true}, {"id-4", 2, false, false}, {"id-1", 2, true, true},
	} {
		found, complete, err := env.Bus.FindMsgID(ctx, subjects.StreamTimers, timer, is(tc.id), tc.limit)
		if err != nil || found != tc.found || complete != tc.complete {
			t.Errorf("FindMsgID(%s, limit %d) = %v, %v, %v; want %v, %v", tc.id, tc.limit, found, complete, err, tc.found, tc.complete)
		}
	}
}

// EnsureTimers never changes a stream it did not make: one without
// schedules is reported, with what differs.
func TestEnsureTimersReportsAnIncompatibleStream(t *testing.T) {
	env := bustest.NewWithOptions(t, bustest.Options{NoProvision: true})
	ctx := testCtx(t)
	if _, err := env.Bus.JetStream().CreateStream(ctx, jetstream.StreamConfig{Name: subjects.StreamTimers, Subjects: []string{subjects.AllTimers}}); err != nil {
		t.Fatal(err)
	}
	var ie *bus.IncompatibleError
	if err := env.Bus.EnsureTimers(ctx); !errors.As(err, &ie) || len(ie.Differences) != 3 {
		t.Fatalf("EnsureTimers = %v, want an *IncompatibleError with three differences", err)
	}
}

// Revisions reads a bucket's revisions from a sequence, up to a count and
// only those stored before a time; Leases makes its bucket on first use.
func TestRevisionsAndLeases(t *testing.T) {
	env := bustest.New(t)
	ctx := testCtx(t)
	if _, err := env.Bus.Leases(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Bus.Leases(ctx); err != nil {
		t.Fatalf("Leases again: %v", err)
	}
	kv, err := env.Bus.KV(ctx, subjects.BucketCheckpoints) // keeps history
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := kv.Put(ctx, fmt.Sprintf("k%d", i%3), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Delete(ctx, "k0"); err != nil {
		t.Fatal(err)
	}
	all, err := kv.Revisions(ctx, 0, 100, time.Now().Add(time.Minute))
	if err != nil || len(all) != 6 || all[0].Key != "k0" || all[0].Revision != 1 || !all[5].Deleted || all[5].Key != "k0" {
		t.Fatalf("Revisions = %+v, %v; want 6 revisions, k0 first, a delete of k0 last", all, err)
	}
	if some, err := kv.Revisions(ctx, 3, 2, time.Now().Add(time.Minute)); err != nil || len(some) != 2 || some[0].Revision != 3 || some[1].Revision != 4 {
		t.Fatalf("Revisions from 3, at most 2 = %+v, %v", some, err)
	}
	if none, err := kv.Revisions(ctx, 0, 100, all[0].Time); err != nil || len(none) != 0 {
		t.Fatalf("Revisions before the first was stored = %+v, %v; want none", none, err)
	}
	if none, err := kv.Revisions(ctx, 7, 100, time.Now().Add(time.Minute)); err != nil || len(none) != 0 {
		t.Fatalf("Revisions past the end = %+v, %v; want none", none, err)
	}
}
