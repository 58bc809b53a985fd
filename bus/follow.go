package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// followHeartbeat is how often an idle follower hears from its consumer's
// server.
const followHeartbeat = 2 * time.Second

// ErrStop may be returned by a FollowFunc to end Follow without error.
var ErrStop = errors.New("bus: stop following")

// Record is one stored client event with its offset (stream sequence).
type Record struct {
	Offset   uint64
	Envelope events.Envelope
	// Pending is how many more events the stream held for this workflow when
	// this one was delivered: 0 means the reader has caught up.
	Pending uint64
}

// FollowFunc receives each record in order; returning ErrStop ends Follow.
type FollowFunc func(ctx context.Context, r Record) error

// Follow replays a workflow's client events strictly after offset (0 means
// from its first event), then follows new ones until ctx ends or fn
// returns an error (ErrStop ends it with nil). Records that fail to decode
// (most likely published by an agent outside Go that left out a header or
// a required field) are not delivered to fn, and are logged with their
// subject, offset, type, source and what was wrong, at a JSON pointer.
//
// It needs no consumer (followLive) once the events stream republishes
// its events (Provision sees to that); on a stream that does not, it
// follows with an ordered consumer filtered to the workflow's subject.
func (b *Bus) Follow(ctx context.Context, tenant, workflow string, after uint64, fn FollowFunc) error {
	subj, err := subjects.Events(tenant, workflow)
	if err != nil {
		return err
	}
	b.following.Add(1)
	defer b.following.Add(-1)
	if b.republishes(ctx) {
		return b.followLive(ctx, tenant, workflow, subj, after, fn)
	}
	return b.followLoop(ctx, subj, after, fn)
}

// Following is how many Follow calls are under way on b.
func (b *Bus) Following() int { return int(b.following.Load()) }

// followLoop follows the events filtered by subj from after (see follow),
// starting a new consumer whenever one stalls.
func (b *Bus) followLoop(ctx context.Context, subj string, after uint64, fn FollowFunc) error {
	for {
		err := b.follow(ctx, subj, &after, fn)
		if !errors.Is(err, errStalled) {
			return err
		}
		b.log.Warn("follower stalled: its consumer delivered nothing while newer events were stored; following again from its cursor",
			"subject", subj, "after", after)
	}
}

// errStalled ends one consumer of Follow whose events stopped coming
// while the stream held newer ones.
var errStalled = errors.New("bus: follower stalled")

// follow runs one ordered consumer for Follow from *after, moving *after
// past every stored event it reads. A stall check runs beside it: when
// nothing arrived for followStallIdle but the stream holds an event of
// the workflow past *after, the consumer is stuck (its server died and
// the client library could not replace it) and follow returns errStalled
// for Follow to start a new one.
func (b *Bus) follow(ctx context.Context, subj string, after *uint64, fn FollowFunc) error {
	// A follower that dies without cleaning up leaves its consumer behind
	// for InactiveThreshold only.
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}, DeliverPolicy: jetstream.DeliverAllPolicy,
		InactiveThreshold: time.Minute}
	if *after > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = *after + 1
	}
	cons, err := b.js.OrderedConsumer(ctx, subjects.StreamEvents, cfg)
	if err != nil {
		return fmt.Errorf("bus: follow %s: %w", subj, err)
	}
	var cursor atomic.Uint64 // the last stream sequence read
	cursor.Store(*after)
	var busy atomic.Bool // fn has a record: a slow client is no stall
	stalled := make(chan struct{})
	// fn runs in the consumer's callback (Consume), in order, with no
	// hand-off to another goroutine per event; delivering (under mu) is
	// what follow waits out before it returns, so that fn never runs after
	// it. Consume rather than the Messages iterator for one more reason: a
	// pull that meets "no responders" — a new consumer, hosted on another
	// server of a cluster, whose pull subscription that server has not yet
	// heard of (its interest travels the routes apart from the create
	// response) — is reported to a callback consumer, which the client
	// library then replaces at once, while an iterator ignores it and
	// waits for two missed heartbeats: a new follower delivered nothing
	// for 3–5 s about one time in ten on a cluster. The library replaces a
	// consumer whose server died while holding its lock, retrying for as
	// long as the cluster has no answer, and Stop and CachedInfo wait for
	// it meanwhile: follow never calls into it but to stop it, in the
	// background.
	var mu sync.Mutex
	var over atomic.Bool         // follow is returning: deliver nothing more
	ended := make(chan error, 1) // fn's error (ErrStop too)
	deliver := func(m jetstream.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if over.Load() {
			return
		}
		md, err := m.Metadata()
		if err != nil {
			return
		}
		cursor.Store(md.Sequence.Stream)
		env, err := events.Decode(m.Headers(), m.Data())
		if err != nil {
			// Most likely an agent outside Go that left out a header or a
			// required field: say which, where, and that no client sees it.
			b.malformed(m.Subject(), md.Sequence.Stream, m.Headers(), err)
			return
		}
		busy.Store(true)
		err = fn(ctx, Record{Offset: md.Sequence.Stream, Envelope: env, Pending: md.NumPending})
		busy.Store(false)
		if err != nil {
			over.Store(true)
			ended <- err
		}
	}
	// Idle heartbeats every 2s: when the server hosting the consumer dies
	// (a cluster losing a node), two missed ones reset the ordered
	// consumer on a live server within seconds, not the default 30s.
	cc, err := cons.Consume(deliver, jetstream.PullMaxMessages(256), jetstream.PullHeartbeat(followHeartbeat),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			b.log.Debug("follower consumer", "subject", subj, "err", err) // the library resets the consumer itself
		}))
	if err != nil {
		return fmt.Errorf("bus: follow %s: %w", subj, err)
	}
	waitForCleanup := true
	defer func() {
		// Stopping an ordered consumer leaves it on the server until its
		// inactivity threshold; delete it now so followers never pile up.
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.deleteOrdered(ctx, cons, cc)
		}()
		if waitForCleanup {
			// Bounded: a consumer being replaced must not hold up the
			// follower's caller (a gateway shutting down) for long.
			select {
			case <-done:
			case <-time.After(6 * time.Second):
			}
		}
	}()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go b.watchStall(wctx, subj, &cursor, &busy, stalled)
	var err2 error
	select {
	case err2 = <-ended:
		if errors.Is(err2, ErrStop) {
			err2 = nil
		}
	case <-stalled:
		waitForCleanup = false
		err2 = errStalled
	case <-cc.Closed():
		err2 = fmt.Errorf("bus: follow %s: %w", subj, jetstream.ErrMsgIteratorClosed)
		if ctx.Err() != nil {
			err2 = ctx.Err()
		}
	case <-ctx.Done():
		err2 = ctx.Err()
	}
	// Wait out a delivery under way (fn sees ctx end), and let none start.
	over.Store(true)
	mu.Lock()
	*after = cursor.Load()
	mu.Unlock()
	return err2
}

// A follower that has read nothing for followStallIdle asks the stream,
// at most every followStallCheck while it stays idle, whether it should
// have: an idle follower of a live workflow costs one direct get per check.
const (
	followStallIdle  = 3 * time.Second
	followStallCheck = 2 * time.Second
	followStallTick  = 500 * time.Millisecond
	// followHeldWarn is how long fn may hold one record before the
	// follower says its reader is not taking events.
	followHeldWarn = 10 * time.Second
)

// watchStall closes stalled when the follower's cursor has stood still
// (and fn held no record) for followStallIdle while the events stream's
// leader holds an event on subj past it. Progress is judged by time, not
// by ticks, so a stall is seen within followStallIdle+followStallCheck of the first
// event the consumer failed to deliver, wherever the ticker stood.
func (b *Bus) watchStall(ctx context.Context, subj string, cursor *atomic.Uint64, busy *atomic.Bool, stalled chan<- struct{}) {
	t := time.NewTicker(followStallTick)
	defer t.Stop()
	seen := cursor.Load()
	moved := time.Now() // when the cursor last moved or fn last held a record
	var asked time.Time
	var heldAt uint64 // the cursor when fn was last seen holding a record
	var held time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := cursor.Load()
		if busy.Load() {
			// A record fn holds this long is a reader not taking events (a
			// full send queue): no stall of the consumer, but say so once.
			if now != heldAt || held.IsZero() {
				heldAt, held = now, time.Now()
			} else if d := time.Since(held); d >= followHeldWarn && d < followHeldWarn+followStallTick {
				b.log.Warn("follower waiting for its reader to take a record", "subject", subj, "offset", now, "for", d.Round(time.Second))
			}
		} else {
			held = time.Time{}
		}
		if now != seen || busy.Load() {
			seen, moved = now, time.Now()
			continue
		}
		if time.Since(moved) < followStallIdle || time.Since(asked) < followStallCheck {
			continue
		}
		asked = time.Now()
		qctx, cancel := context.WithTimeout(ctx, followStallCheck)
		newest, err := b.leaderLastOffset(qctx, subj)
		cancel()
		if err != nil {
			b.log.Warn("follower idle, and the stream does not say whether it should be", "cursor", now, "err", err)
		} else {
			b.log.Debug("follower idle", "cursor", now, "newest", newest)
		}
		if err == nil && newest > now && cursor.Load() == now && !busy.Load() {
			close(stalled)
			return
		}
	}
}

// LastOffset returns the offset of a workflow's newest event, 0 if it has none.
func (b *Bus) LastOffset(ctx context.Context, tenant, workflow string) (uint64, error) {
	r, err := b.LastRecord(ctx, tenant, workflow)
	return r.Offset, err
}

// LastRecord returns a workflow's newest event; a zero Record (Offset 0) if
// it has none.
func (b *Bus) LastRecord(ctx context.Context, tenant, workflow string) (Record, error) {
	subj, err := subjects.Events(tenant, workflow)
	if err != nil {
		return Record{}, err
	}
	s, err := b.js.Stream(ctx, subjects.StreamEvents)
	if err != nil {
		return Record{}, fmt.Errorf("bus: events stream: %w", err)
	}
	m, err := s.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		// A direct get, which a replica still catching up after a
		// restart may answer: "none" is asked again of the leader
		// (a replay told its events expired when they had not: make
		// chaos on a --compress-streams store).
		lm, lerr := leaderGet(ctx, b.nc, subjects.StreamEvents, map[string]any{"last_by_subj": subj})
		if errors.Is(lerr, errNoMsg) {
			return Record{}, nil
		}
		if lerr != nil {
			return Record{}, fmt.Errorf("bus: last event of %s: %w", subj, lerr)
		}
		m = &jetstream.RawStreamMsg{Subject: lm.Subject, Sequence: lm.Seq, Header: lm.Header, Data: lm.Data}
		err = nil
	}
	if err != nil {
		return Record{}, fmt.Errorf("bus: last event of %s: %w", subj, err)
	}
	env, err := events.Decode(m.Header, m.Data)
	if err != nil {
		// The offset still counts (a cursor may point past it), but the
		// event itself is not one a client will see: say so, as Follow does.
		b.malformed(subj, m.Sequence, m.Header, err)
		return Record{Offset: m.Sequence}, nil
	}
	return Record{Offset: m.Sequence, Envelope: env}, nil
}

// malformed logs a stored event no client will see, with where it is,
// what it claims to be and what was wrong.
func (b *Bus) malformed(subj string, offset uint64, h map[string][]string, err error) {
	b.log.Warn("event not delivered to clients: malformed", "subject", subj, "offset", offset,
		"type", lookupHeader(h, events.HeaderType), "source", lookupHeader(h, events.HeaderSource), "err", err)
}

// deleteOrdered stops an ordered consumer's Consume and deletes the
// consumer, which would otherwise stay on the server until its
// inactivity threshold. The library may be replacing it (its server
// died), and Stop waits for that: run it in the background when the
// caller must not wait.
func (b *Bus) deleteOrdered(ctx context.Context, cons jetstream.Consumer, cc jetstream.ConsumeContext) {
	cc.Stop()
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = b.js.DeleteConsumer(dctx, subjects.StreamEvents, info.Name)
}

// lookupHeader reads a header by name whatever its case: a publisher outside
// Go may send Ce-Type as well as ce-type.
func lookupHeader(h map[string][]string, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range h {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}
