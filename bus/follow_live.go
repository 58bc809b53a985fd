package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// A live follower's subscription holds at most this many events (or
// bytes) its reader has not taken; past that the client library drops
// them, and the follower reads them back from the stream.
const (
	livePendingMsgs  = 1024
	livePendingBytes = 4 << 20
)

// liveRecheck is how long a bus takes "no" for an answer to whether the
// events stream republishes: a stream provisioned by an older agentbus
// gains it when a newer one starts.
const liveRecheck = 30 * time.Second

// liveMode remembers whether the events stream republishes its events
// for followers: yes for the bus's lifetime, no for liveRecheck.
type liveMode struct {
	mu      sync.Mutex
	yes     bool
	checked time.Time
}

// republishes reports whether the events stream republishes each event
// on its workflow's live subject, asking the stream at most every
// liveRecheck until it does; a stream that cannot be asked is a no.
func (b *Bus) republishes(ctx context.Context) bool {
	b.live.mu.Lock()
	defer b.live.mu.Unlock()
	if b.live.yes || time.Since(b.live.checked) < liveRecheck {
		return b.live.yes
	}
	s, err := b.js.Stream(ctx, subjects.StreamEvents)
	if err != nil {
		return false
	}
	b.live.checked = time.Now()
	rp := s.CachedInfo().Config.RePublish
	b.live.yes = rp != nil && rp.Source == subjects.AllEvents && rp.Destination == subjects.LiveRepublish && !rp.HeadersOnly
	return b.live.yes
}

// followLive follows subj's events (a workflow's) without a consumer.
// The events stream republishes each event it stores on the workflow's
// live subject, with its sequence and the sequence of the workflow's
// event before it (Nats-Sequence, Nats-Last-Sequence): followLive
// subscribes to that, then reads from the stream (direct gets) what was
// stored up to the newest event its leader knows of, and then delivers
// each live event — reading first from the stream whatever came before
// it and did not reach it: an event the old leader stored but did not
// republish, one the subscription missed across a reconnect, or one
// the client library dropped because fn was slower than the events.
// A gap at the end, which no later event reveals, is found by the idle
// check followStall makes of a consumer: the stream's leader holds an
// event past the cursor.
//
// On a cluster this saves, per follower, the consumer's creation and
// deletion (each a meta-group proposal), its pulls and heartbeats: the
// idle check and one request to the stream's leader are all it asks.
func (b *Bus) followLive(ctx context.Context, tenant, workflow, subj string, after uint64, fn FollowFunc) error {
	live, err := subjects.Live(tenant, workflow)
	if err != nil {
		return err
	}
	f := &liveFollower{b: b, ctx: ctx, subj: subj, fn: fn, ended: make(chan error, 1)}
	f.cursor.Store(after)
	// Counted before the subscription: a reconnect from here on, even one
	// before watch starts (the catch-up below can take a while), is one
	// watch sees.
	reconnects := b.reconnects.Load()
	// Nothing is delivered until what was stored before the subscription
	// is: the subscription's callback waits for mu.
	f.mu.Lock()
	sub, err := b.nc.Subscribe(live, f.onLive)
	if err != nil {
		f.mu.Unlock()
		return fmt.Errorf("bus: follow %s: %w", subj, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = sub.SetPendingLimits(livePendingMsgs, livePendingBytes)
	// The leader is asked after the subscription, on the same connection:
	// an event it stores after answering goes out to the subscription.
	// Bounded: a stream electing a leader answers nothing, and the
	// subscription's events wait for mu.
	qctx, qcancel := context.WithTimeout(ctx, followStallCheck)
	newest, err := b.leaderLastOffset(qctx, subj)
	qcancel()
	if err != nil && ctx.Err() == nil {
		f.behind.Store(true) // the check below reads it when it can
		b.log.Warn("follower: the events stream's leader did not say how far the workflow's events go; following live, reading what was stored once it answers",
			"subject", subj, "err", err)
	} else if err == nil {
		f.catchUp(newest)
	}
	f.mu.Unlock()

	if b.beforeWatch != nil {
		b.beforeWatch()
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	closed := make(chan struct{})
	go f.watch(wctx, sub, reconnects, closed)
	var end error
	select {
	case end = <-f.ended:
		if errors.Is(end, ErrStop) {
			end = nil
		}
	case <-closed:
		end = fmt.Errorf("bus: follow %s: %w", subj, nats.ErrConnectionClosed)
	case <-ctx.Done():
		end = ctx.Err()
	}
	// Wait out a delivery under way (fn sees ctx end), and let none start.
	f.mu.Lock()
	f.over = true
	f.mu.Unlock()
	return end
}

// liveFollower is one followLive: its cursor (the last sequence read)
// and what it has delivered, under mu.
type liveFollower struct {
	b    *Bus
	ctx  context.Context
	subj string
	fn   FollowFunc

	mu     sync.Mutex
	over   bool          // fn returned an error, or followLive returns: deliver nothing more
	ended  chan error    // fn's error (ErrStop too)
	cursor atomic.Uint64 // written under mu
	busy   atomic.Bool   // fn holds a record: a slow reader is no gap
	// behind is set when an event may have been missed and could not be
	// read at once (the stream did not answer); watch reads it then.
	behind atomic.Bool
}

// onLive takes one republished event: any gap before it is read from the
// stream first, an event already read is dropped.
func (f *liveFollower) onLive(m *nats.Msg) {
	seq, err1 := strconv.ParseUint(m.Header.Get(nats.JSSequence), 10, 64)
	prev, err2 := strconv.ParseUint(m.Header.Get(nats.JSLastSequence), 10, 64)
	if err1 != nil || err2 != nil || m.Header.Get(nats.JSStream) != subjects.StreamEvents {
		f.b.log.Warn("follower: a message on the live subject that the events stream did not republish; ignored",
			"subject", m.Subject, "sequence", m.Header.Get(nats.JSSequence), "last", m.Header.Get(nats.JSLastSequence))
		return
	}
	if f.b.dropLive != nil && f.b.dropLive(seq) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.over || seq <= f.cursor.Load() {
		return
	}
	if prev > f.cursor.Load() && !f.catchUp(prev) {
		return // behind is set: watch reads the gap, and this event after it
	}
	if !f.over && seq > f.cursor.Load() {
		f.deliver(seq, 0, m.Header, m.Data)
	}
}

// catchUp reads the workflow's stored events past the cursor up to
// target at least and delivers them. It reports false, with behind set,
// when the stream did not answer; under mu.
func (f *liveFollower) catchUp(target uint64) bool {
	take := func(seq, pending uint64, h nats.Header, data []byte) bool {
		if f.over {
			return false
		}
		if seq > f.cursor.Load() {
			f.deliver(seq, pending, h, data)
		}
		return true
	}
	for !f.over && f.cursor.Load() < target {
		from := f.cursor.Load() + 1
		n, more, err := f.b.readEvents(f.ctx, f.subj, from, take)
		if err == nil && n > 0 && more > readBatch && f.cursor.Load() < target {
			// A long backlog (a replay from far back): an ordered consumer
			// reads it about twice as fast.
			err = f.b.readOrdered(f.ctx, f.subj, f.cursor.Load()+1, target, take)
		}
		if err == nil && n == 0 {
			// A replica still catching up answered the direct get: ask the
			// leader, which holds every event up to target.
			var lm leaderMsg
			lctx, cancel := context.WithTimeout(f.ctx, readWait)
			lm, err = leaderGet(lctx, f.b.nc, subjects.StreamEvents, map[string]any{"seq": from, "next_by_subj": f.subj})
			cancel()
			switch {
			case errors.Is(err, errNoMsg):
				// Expired or deleted since the target was known.
				f.cursor.Store(target)
				return true
			case err == nil:
				var more uint64 // Record.Pending: 0 once caught up
				if lm.Seq < target {
					more = 1
				}
				f.deliver(lm.Seq, more, lm.Header, lm.Data)
			}
		}
		if err != nil {
			if f.ctx.Err() == nil {
				f.b.log.Warn("follower: could not read stored events; trying again", "subject", f.subj, "after", f.cursor.Load(), "err", err)
			}
			f.behind.Store(true)
			return false
		}
	}
	return true
}

// deliver hands one stored event to fn and moves the cursor past it; an
// event that does not decode is logged, and skipped. Under mu.
func (f *liveFollower) deliver(seq, pending uint64, h nats.Header, data []byte) {
	f.cursor.Store(seq)
	env, err := events.Decode(h, data)
	if err != nil {
		f.b.malformed(f.subj, seq, h, err)
		return
	}
	f.busy.Store(true)
	err = f.fn(f.ctx, Record{Offset: seq, Envelope: env, Pending: pending})
	f.busy.Store(false)
	if err != nil {
		f.over = true
		f.ended <- err
	}
}

// watch reads, from the stream, what the subscription missed: at once
// when the client library dropped events, the connection reconnected or
// a read failed (behind), and
// when the follower has been idle for followStallIdle while the stream's
// leader holds a newer event of the workflow — its last event lost in a
// reconnect, or a leader that stored it and died before republishing.
// reconnects is the connection's reconnect count when sub was made.
// It closes closed, and returns, once the bus's connection is closed.
func (f *liveFollower) watch(ctx context.Context, sub *nats.Subscription, reconnects uint64, closed chan<- struct{}) {
	t := time.NewTicker(followStallTick)
	defer t.Stop()
	seen := f.cursor.Load()
	moved := time.Now()
	var asked time.Time
	var dropped int
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if f.b.nc.IsClosed() {
			close(closed)
			return
		}
		now := f.cursor.Load()
		if now != seen || f.busy.Load() {
			seen, moved = now, time.Now()
		}
		d, _ := sub.Dropped()
		r := f.b.reconnects.Load()
		// Dropped by the client library, missed while the connection was
		// away, or not read when the stream did not answer.
		lost := d != dropped || r != reconnects || f.behind.Load()
		dropped, reconnects = d, r
		if !lost && (time.Since(moved) < followStallIdle || time.Since(asked) < followStallCheck) {
			continue
		}
		asked = time.Now()
		qctx, cancel := context.WithTimeout(ctx, followStallCheck)
		newest, err := f.b.leaderLastOffset(qctx, f.subj)
		cancel()
		if err != nil {
			f.b.log.Warn("follower idle, and the stream does not say whether it should be", "cursor", now, "err", err)
			if lost {
				f.behind.Store(true) // ask again at the next tick
			}
			continue
		}
		if newest <= f.cursor.Load() {
			f.behind.Store(false)
			continue
		}
		if !lost {
			f.b.log.Info("follower: reading from the stream events its live subject did not bring", "subject", f.subj,
				"after", f.cursor.Load(), "newest", newest)
		}
		f.mu.Lock()
		f.behind.Store(false)
		f.catchUp(newest)
		f.mu.Unlock()
		seen, moved = f.cursor.Load(), time.Now()
	}
}
