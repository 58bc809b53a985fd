package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// twoWorkflows publishes 10 events for w1 and 3 for w2, interleaved, and
// returns each workflow's offsets in publish order.
func twoWorkflows(t *testing.T, b *bus.Bus) (w1, w2 []uint64) {
	t.Helper()
	for n := 1; n <= 10; n++ {
		w1 = append(w1, publishEvent(t, b, "w1", n))
		if n%3 == 0 {
			w2 = append(w2, publishEvent(t, b, "w2", n/3))
		}
	}
	return w1, w2
}

// collect runs Follow until it has seen want records, then stops it with ErrStop.
func collect(t *testing.T, b *bus.Bus, workflow string, after uint64, want int) []bus.Record {
	t.Helper()
	var got []bus.Record
	err := b.Follow(testCtx(t), tenant, workflow, after, func(_ context.Context, r bus.Record) error {
		got = append(got, r)
		if len(got) == want {
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Follow(%s, after=%d) = %v, want nil after ErrStop", workflow, after, err)
	}
	return got
}

// checkRecords checks that recs are workflow w1's events first..last, in
// order, at the given offsets.
func checkRecords(t *testing.T, recs []bus.Record, offsets []uint64, first int) {
	t.Helper()
	if len(recs) != len(offsets) {
		t.Fatalf("got %d records, want %d", len(recs), len(offsets))
	}
	for i, r := range recs {
		n := first + i
		var st events.Status
		if err := r.Envelope.Unmarshal(&st); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if r.Envelope.WorkflowID != "w1" || st.Message != strconv.Itoa(n) || r.Envelope.ID != events.EventKey(tenant, "w1", n) {
			t.Errorf("record %d = %s %q (workflow %s), want w1's event %d", i, r.Envelope.ID, st.Message, r.Envelope.WorkflowID, n)
		}
		if r.Offset != offsets[i] {
			t.Errorf("record %d offset = %d, want %d", i, r.Offset, offsets[i])
		}
		if i > 0 && r.Offset <= recs[i-1].Offset {
			t.Errorf("offsets not strictly increasing: %d after %d", r.Offset, recs[i-1].Offset)
		}
	}
	if last := recs[len(recs)-1]; last.Pending != 0 {
		t.Errorf("last record Pending = %d, want 0 (caught up)", last.Pending)
	}
}

func TestFollowReplaysOneWorkflowInOrder(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	offsets, w2 := twoWorkflows(t, env.Bus)

	recs := collect(t, env.Bus, "w1", 0, 10)
	checkRecords(t, recs, offsets, 1)
	if recs[0].Pending != 9 {
		t.Errorf("first record Pending = %d, want 9", recs[0].Pending)
	}

	last, err := env.Bus.LastOffset(testCtx(t), tenant, "w1")
	if err != nil || last != recs[len(recs)-1].Offset {
		t.Errorf("LastOffset(w1) = %d, %v; want %d", last, err, recs[len(recs)-1].Offset)
	}
	last2, err := env.Bus.LastOffset(testCtx(t), tenant, "w2")
	if err != nil || last2 != w2[len(w2)-1] {
		t.Errorf("LastOffset(w2) = %d, %v; want %d", last2, err, w2[len(w2)-1])
	}
	none, err := env.Bus.LastOffset(testCtx(t), tenant, "unknown")
	if err != nil || none != 0 {
		t.Errorf("LastOffset(unknown) = %d, %v; want 0, nil", none, err)
	}
}

func TestFollowStrictlyAfterOffset(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	offsets, _ := twoWorkflows(t, env.Bus)
	tests := []struct {
		name  string
		after uint64
		first int // the first w1 event expected
	}{
		{"after the 4th", offsets[3], 5},
		{"after a w2 event between the 6th and 7th", offsets[5] + 1, 7},
		{"after the 9th", offsets[8], 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := offsets[tt.first-1:]
			checkRecords(t, collect(t, env.Bus, "w1", tt.after, len(want)), want, tt.first)
		})
	}
}

func TestFollowKeepsFollowing(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	offsets, _ := twoWorkflows(t, env.Bus)

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	recs := make(chan bus.Record)
	done := make(chan error, 1)
	go func() {
		done <- env.Bus.Follow(ctx, tenant, "w1", offsets[7], func(ctx context.Context, r bus.Record) error {
			select {
			case recs <- r:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	for i := 9; i <= 10; i++ {
		if r := recv(t, recs, fmt.Sprintf("replayed event %d", i)); r.Offset != offsets[i-1] {
			t.Fatalf("replayed offset %d, want %d", r.Offset, offsets[i-1])
		}
	}
	// Caught up: these are published while Follow waits.
	for n := 11; n <= 13; n++ {
		publishEvent(t, env.Bus, "w2", n) // not followed
		off := publishEvent(t, env.Bus, "w1", n)
		r := recv(t, recs, fmt.Sprintf("live event %d", n))
		if r.Offset != off || r.Envelope.ID != events.EventKey(tenant, "w1", n) {
			t.Fatalf("live record = %s at %d, want w1's event %d at %d", r.Envelope.ID, r.Offset, n, off)
		}
	}

	cancel()
	err := recv(t, done, "Follow's return after cancel")
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow after cancel = %v, want nil or context.Canceled", err)
	}
}

func TestFollowReturnsHandlerError(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	publishEvent(t, env.Bus, "w1", 1)
	boom := errors.New("boom")
	err := env.Bus.Follow(testCtx(t), tenant, "w1", 0, func(context.Context, bus.Record) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Follow = %v, want the handler's error", err)
	}
}

func TestFollowSkipsMalformed(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	subj, err := subjects.Events(tenant, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Bus.JetStream().Publish(testCtx(t), subj, []byte("not an event")); err != nil {
		t.Fatalf("raw publish: %v", err)
	}
	off := publishEvent(t, env.Bus, "w1", 1)
	recs := collect(t, env.Bus, "w1", 0, 1)
	if recs[0].Offset != off {
		t.Fatalf("first record at %d, want the valid event at %d (the malformed one skipped)", recs[0].Offset, off)
	}
}

func TestFollowInvalidIDs(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	fn := func(context.Context, bus.Record) error {
		t.Error("FollowFunc called for an invalid subject")
		return bus.ErrStop
	}
	tests := []struct{ tenant, workflow string }{
		{"Bad.Tenant", "w1"},
		{"acme", "w1.>"},
		{"", "w1"},
		{"acme", "*"},
	}
	for _, tt := range tests {
		t.Run(tt.tenant+"/"+tt.workflow, func(t *testing.T) {
			if err := env.Bus.Follow(testCtx(t), tt.tenant, tt.workflow, 0, fn); !errors.Is(err, subjects.ErrInvalidToken) {
				t.Errorf("Follow = %v, want ErrInvalidToken", err)
			}
			if _, err := env.Bus.LastOffset(testCtx(t), tt.tenant, tt.workflow); !errors.Is(err, subjects.ErrInvalidToken) {
				t.Errorf("LastOffset = %v, want ErrInvalidToken", err)
			}
		})
	}
}

func TestLastRecord(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	if r, err := env.Bus.LastRecord(testCtx(t), tenant, "w1"); err != nil || r.Offset != 0 || r.Envelope.ID != "" {
		t.Fatalf("LastRecord of a workflow without events = %+v, %v; want a zero Record", r, err)
	}
	publishEvent(t, env.Bus, "w1", 1)
	off := publishEvent(t, env.Bus, "w1", 2)
	publishEvent(t, env.Bus, "w2", 1)
	r, err := env.Bus.LastRecord(testCtx(t), tenant, "w1")
	if err != nil || r.Offset != off || r.Envelope.ID != events.EventKey(tenant, "w1", 2) || r.Envelope.Type != events.TypeStatus {
		t.Fatalf("LastRecord(w1) = %d %s, %v; want w1's event 2 at %d", r.Offset, r.Envelope.ID, err, off)
	}
	if _, err := env.Bus.LastRecord(testCtx(t), "Bad.Tenant", "w1"); !errors.Is(err, subjects.ErrInvalidToken) {
		t.Errorf("LastRecord with an invalid tenant = %v, want ErrInvalidToken", err)
	}
	// A malformed newest message still gives its offset, with no envelope.
	subj, _ := subjects.Events(tenant, "w1")
	ack, err := env.Bus.JetStream().Publish(testCtx(t), subj, []byte("garbage"))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := env.Bus.LastRecord(testCtx(t), tenant, "w1"); err != nil || r.Offset != ack.Sequence || r.Envelope.ID != "" {
		t.Errorf("LastRecord over a malformed event = %d %q, %v; want offset %d and no envelope", r.Offset, r.Envelope.ID, err, ack.Sequence)
	}
}

// TestFollowLeavesNoConsumerBehind: many short follows in a row must not
// accumulate consumers (the server caps them per stream).
func TestFollowLeavesNoConsumerBehind(t *testing.T) {
	env := bustest.New(t)
	ctx := testCtx(t)
	publishEvent(t, env.Bus, "wf-one", 0)
	subs := env.Bus.Conn().NumSubscriptions()
	for _, follow := range []func(context.Context, string, string, uint64, bus.FollowFunc) error{env.Bus.Follow, env.Bus.FollowWithConsumer} {
		for range 10 {
			// Ended by the callback, and ended by the context.
			_ = follow(ctx, tenant, "wf-one", 0, func(context.Context, bus.Record) error { return bus.ErrStop })
			fctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			_ = follow(fctx, tenant, "wf-one", 0, func(context.Context, bus.Record) error { return nil })
			cancel()
		}
	}
	if n := env.Bus.Conn().NumSubscriptions(); n != subs {
		t.Errorf("%d subscriptions after the follows, %d before", n, subs)
	}
	s, err := env.Bus.JetStream().Stream(ctx, subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, func() (bool, string) {
		info, err := s.Info(ctx)
		if err != nil {
			return false, err.Error()
		}
		return info.State.Consumers == 0, fmt.Sprintf("%d consumers left on %s", info.State.Consumers, subjects.StreamEvents)
	})
}

// A follower whose consumer stops delivering while the workflow has newer
// events (here: the consumer paused on the server, as a consumer on a dead
// server looks) notices within the stall check and follows again from its
// cursor: the next events arrive, none twice.
func TestFollowRecoversFromAStuckConsumer(t *testing.T) {
	env := bustest.New(t)
	ctx, cancelAll := context.WithTimeout(context.Background(), time.Minute)
	defer cancelAll()
	publishEvent(t, env.Bus, "w1", 1)
	got := make(chan bus.Record, 16)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = env.Bus.FollowWithConsumer(fctx, tenant, "w1", 0, func(_ context.Context, r bus.Record) error {
			got <- r
			return nil
		})
	}()
	first := recv(t, got, "event 1")
	s, err := env.Bus.JetStream().Stream(ctx, subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	paused := 0
	for name := range s.ListConsumers(ctx).Info() {
		if _, err := env.Bus.JetStream().PauseConsumer(ctx, subjects.StreamEvents, name.Name, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		paused++
	}
	if paused != 1 {
		t.Fatalf("paused %d consumers, want the follower's one", paused)
	}
	off2 := publishEvent(t, env.Bus, "w1", 2)
	off3 := publishEvent(t, env.Bus, "w1", 3)
	for _, want := range []uint64{off2, off3} {
		select {
		case r := <-got:
			if r.Offset != want {
				t.Fatalf("after the stall got offset %d, want %d (first was %d)", r.Offset, want, first.Offset)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the follower of a stuck consumer got nothing within 30s (want offset %d)", want)
		}
	}
}
