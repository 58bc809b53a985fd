package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// consumers is how many consumers the events stream has.
func consumers(t testing.TB, b *bus.Bus) int {
	t.Helper()
	s, err := b.JetStream().Stream(testCtx(t), subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// followInto follows workflow from after into a channel until the test
// ends.
func followInto(t *testing.T, b *bus.Bus, workflow string, after uint64, fn func()) <-chan bus.Record {
	t.Helper()
	got := make(chan bus.Record, 4096)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		_ = b.Follow(ctx, tenant, workflow, after, func(_ context.Context, r bus.Record) error {
			if fn != nil {
				fn()
			}
			got <- r
			return nil
		})
	}()
	return got
}

// expectMessages receives records whose status messages are from..to, in
// order, and no other.
func expectMessages(t *testing.T, got <-chan bus.Record, from, to int, what string) {
	t.Helper()
	for n := from; n <= to; n++ {
		r := recv(t, got, fmt.Sprintf("event %d %s", n, what))
		var st struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(r.Envelope.Data, &st)
		if st.Message != fmt.Sprint(n) {
			t.Fatalf("%s: got event %q (offset %d), want %d", what, st.Message, r.Offset, n)
		}
	}
}

// The events stream republishes each event on its workflow's live
// subject, and a follower reads what was stored before it started and
// what comes after without a consumer of its own.
func TestFollowLiveNeedsNoConsumer(t *testing.T) {
	env := bustest.New(t)
	s, err := env.Bus.JetStream().Stream(testCtx(t), subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if rp := s.CachedInfo().Config.RePublish; rp == nil || rp.Destination != subjects.LiveRepublish {
		t.Fatalf("events stream republish is %+v, want to %s", rp, subjects.LiveRepublish)
	}
	for n := 1; n <= 3; n++ {
		publishEvent(t, env.Bus, "w1", n)
	}
	publishEvent(t, env.Bus, "w2", 99) // another workflow's: not w1's
	got := followInto(t, env.Bus, "w1", 0, nil)
	expectMessages(t, got, 1, 3, "stored before the follower started")
	if n := consumers(t, env.Bus); n != 0 {
		t.Fatalf("%d consumers on the events stream, want none", n)
	}
	for n := 4; n <= 6; n++ {
		publishEvent(t, env.Bus, "w1", n)
		publishEvent(t, env.Bus, "w2", 100+n)
	}
	expectMessages(t, got, 4, 6, "published while following")
	select {
	case r := <-got:
		t.Fatalf("an extra record at offset %d", r.Offset)
	case <-time.After(50 * time.Millisecond):
	}
}

// Live events the subscription never got (a reconnect, a slow reader, a
// leader that died before republishing) are read from the stream: those
// in the middle when the next one shows the gap, the last one by the
// idle check.
func TestFollowLiveReadsWhatItMissed(t *testing.T) {
	env := bustest.New(t)
	var mu sync.Mutex
	var lose map[uint64]bool
	env.Bus.DropLive(func(seq uint64) bool {
		mu.Lock()
		defer mu.Unlock()
		return lose[seq]
	})
	publishEvent(t, env.Bus, "w1", 1)
	got := followInto(t, env.Bus, "w1", 0, nil)
	expectMessages(t, got, 1, 1, "stored before")
	// Nothing else publishes: the stream gives the next events consecutive
	// offsets, known before they are published.
	next := publishEvent(t, env.Bus, "w0", 0) + 1
	mu.Lock()
	lose = map[uint64]bool{next: true, next + 2: true, next + 3: true, next + 5: true}
	mu.Unlock()
	start := time.Now()
	for n := 2; n <= 7; n++ {
		if off := publishEvent(t, env.Bus, "w1", n); off != next+uint64(n-2) {
			t.Fatalf("event %d stored at %d, want %d", n, off, next+uint64(n-2))
		}
	}
	expectMessages(t, got, 2, 7, "with events 2, 4, 5 and 7 lost on the live subject")
	// Event 7 was the last, with none after it to show the gap: the idle
	// check found it, within 3 s idle and a 2 s check.
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("the last event, lost live, came %s later; want within 6s", took)
	}
	if n := consumers(t, env.Bus); n != 0 {
		t.Fatalf("%d consumers on the events stream, want none", n)
	}
}

// A reader slower than the events: the subscription drops what it cannot
// hold, and the follower reads those from the stream, in order, once.
func TestFollowLiveSlowReader(t *testing.T) {
	env := bustest.New(t)
	release := make(chan struct{})
	var once sync.Once
	got := followInto(t, env.Bus, "w1", 0, func() { once.Do(func() { <-release }) })
	const n = 3000 // past livePendingMsgs
	js := env.Bus.JetStream()
	subj, _ := subjects.Events(tenant, "w1")
	var acks []jetstream.PubAckFuture
	for i := 1; i <= n; i++ {
		e := statusEvent(t, "w1", i)
		m, err := eventMsg(subj, e)
		if err != nil {
			t.Fatal(err)
		}
		f, err := js.PublishMsgAsync(m)
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, f)
	}
	for _, f := range acks {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatal(err)
		case <-time.After(testTimeout):
			t.Fatal("no ack")
		}
	}
	close(release)
	expectMessages(t, got, 1, n, "to a slow reader")
}

// A message on a live subject that the events stream did not republish
// (no sequence headers) is no event.
func TestFollowLiveIgnoresOtherMessages(t *testing.T) {
	env := bustest.New(t)
	publishEvent(t, env.Bus, "w1", 1)
	got := followInto(t, env.Bus, "w1", 0, nil)
	expectMessages(t, got, 1, 1, "stored before")
	live, _ := subjects.Live(tenant, "w1")
	e := statusEvent(t, "w1", 66)
	m, err := eventMsg(live, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Bus.Conn().PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	publishEvent(t, env.Bus, "w1", 2)
	expectMessages(t, got, 2, 2, "after a stray message")
}

// An events stream provisioned before live follow: Follow uses a consumer
// on it, and Provision adds the republish in place.
func TestProvisionAddsTheRepublish(t *testing.T) {
	env := bustest.New(t)
	ctx := testCtx(t)
	js := env.Bus.JetStream()
	s, err := js.Stream(ctx, subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.RePublish = nil
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	old, err := bus.Connect(ctx, bus.Config{URL: env.URL, Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(old.Close)
	publishEvent(t, env.Bus, "w1", 1)
	got := followInto(t, old, "w1", 0, nil)
	expectMessages(t, got, 1, 1, "from a stream that does not republish")
	if n := consumers(t, env.Bus); n != 1 {
		t.Fatalf("%d consumers on the events stream, want the follower's one", n)
	}
	if err := env.Bus.Provision(ctx, bus.StreamsConfig{}); err != nil {
		t.Fatal(err)
	}
	s, err = js.Stream(ctx, subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if rp := s.CachedInfo().Config.RePublish; rp == nil || rp.Source != subjects.AllEvents || rp.Destination != subjects.LiveRepublish {
		t.Fatalf("after Provision the events stream republishes %+v", rp)
	}
	publishEvent(t, env.Bus, "w1", 2)
	expectMessages(t, got, 2, 2, "after the republish was added")
}

// A reconnect between a follower's first read and the start of its watch
// (a loaded machine can take that long) is one it reads after too: the
// last event, lost on the live subject, comes without the idle check.
func TestFollowLiveSeesAReconnectBeforeItsWatch(t *testing.T) {
	env := bustest.New(t)
	follower := bustest.Connect(t, env)
	var lost atomic.Uint64
	follower.DropLive(func(seq uint64) bool { return seq == lost.Load() })
	var start time.Time
	follower.BeforeWatch(func() {
		lost.Store(publishEvent(t, env.Bus, "w0", 0) + 1)
		publishEvent(t, env.Bus, "w1", 2)
		start = time.Now()
		if err := follower.Conn().ForceReconnect(); err != nil {
			t.Error(err)
			return
		}
		deadline := time.Now().Add(5 * time.Second)
		for follower.Conn().Stats().Reconnects == 0 || !follower.Conn().IsConnected() {
			if time.Now().After(deadline) {
				t.Error("no reconnect in 5s")
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	publishEvent(t, env.Bus, "w1", 1)
	got := followInto(t, follower, "w1", 0, nil)
	expectMessages(t, got, 1, 1, "stored before")
	expectMessages(t, got, 2, 2, "missed, then a reconnect before the watch")
	// The idle check alone would take 3 s idle and a 2 s check.
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("the event missed came %s after the reconnect, want within 2.5s", took)
	}
}

// eventMsg is e as the bus publishes it on subj.
func eventMsg(subj string, e events.Envelope) (*nats.Msg, error) {
	enc, err := events.Encode(e)
	if err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: subj, Header: nats.Header(enc.Header), Data: enc.Data}, nil
}

// A backlog longer than one direct get: the follower reads the rest with
// an ordered consumer, which it deletes once it has caught up, and goes
// on live; from the start and from an offset in the middle alike.
func TestFollowLiveReplaysALongBacklog(t *testing.T) {
	env := bustest.New(t)
	const n = 1500
	var mid uint64
	for i := 1; i <= n; i++ {
		off := publishEvent(t, env.Bus, "w1", i)
		if i == 700 {
			mid = off
		}
		if i%100 == 0 {
			publishEvent(t, env.Bus, "w2", i) // interleaved: offsets are not the events' indexes
		}
	}
	from0 := followInto(t, env.Bus, "w1", 0, nil)
	fromMid := followInto(t, env.Bus, "w1", mid, nil)
	expectMessages(t, from0, 1, n, "of a long backlog")
	expectMessages(t, fromMid, 701, n, "of a long backlog, from the middle")
	eventually(t, func() (bool, string) {
		c := consumers(t, env.Bus)
		return c == 0, fmt.Sprintf("%d consumers left", c)
	})
	publishEvent(t, env.Bus, "w1", n+1)
	expectMessages(t, from0, n+1, n+1, "live after the backlog")
	expectMessages(t, fromMid, n+1, n+1, "live after the backlog")
}

// A follower whose connection reconnects reads at once what it missed
// meanwhile, without waiting for the idle check: here the last event,
// lost on the live subject, then a reconnect.
func TestFollowLiveReadsWhatItMissedAcrossAReconnect(t *testing.T) {
	env := bustest.New(t)
	follower := bustest.Connect(t, env)
	var lost atomic.Uint64
	follower.DropLive(func(seq uint64) bool { return seq == lost.Load() })
	publishEvent(t, env.Bus, "w1", 1)
	got := followInto(t, follower, "w1", 0, nil)
	expectMessages(t, got, 1, 1, "stored before")
	lost.Store(publishEvent(t, env.Bus, "w0", 0) + 1)
	publishEvent(t, env.Bus, "w1", 2)
	start := time.Now()
	if err := follower.Conn().ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	expectMessages(t, got, 2, 2, "missed, then a reconnect")
	// The idle check alone would take 3 s idle and a 2 s check.
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("the event missed came %s after the reconnect, want within 2.5s", took)
	}
}
