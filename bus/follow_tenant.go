package bus

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// FollowTenant replays every client event of a tenant's workflows strictly
// after offset (0 means from the oldest retained) with one ordered
// consumer filtered to "agentbus.<tenant>.events.*", then follows new ones
// until ctx ends or fn returns an error (ErrStop ends it with nil). Records
// come in stream order, so offsets strictly increase across workflows and
// a caller resumes from the last one it handled with no gap and no
// duplicate. Record.Pending counts the tenant's events still behind the
// one delivered. Malformed records are skipped and logged, as by Follow.
// Another tenant's events never reach fn: the server filters them.
//
// As Follow, a consumer that stops delivering while the stream holds
// newer events of the tenant (its server died and the client library could
// not replace it) is replaced from the last offset read. FollowTenant also
// ends with nil when the consumer is closed under it (the connection
// draining); a caller that expects no end should treat that as a failure.
// Safe for concurrent use.
func (b *Bus) FollowTenant(ctx context.Context, tenant string, after uint64, fn FollowFunc) error {
	subj, err := subjects.TenantEvents(tenant)
	if err != nil {
		return err
	}
	for {
		err := b.followTenant(ctx, subj, &after, fn)
		if !errors.Is(err, errStalled) {
			return err
		}
		b.log.Warn("tenant follower stalled: its consumer delivered nothing while the tenant had newer events; following again from its cursor",
			"subject", subj, "after", after)
	}
}

// followTenant runs one ordered consumer for FollowTenant from *after,
// moving *after past every stored event it reads.
func (b *Bus) followTenant(ctx context.Context, subj string, after *uint64, fn FollowFunc) error {
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
	// Idle heartbeats as in follow: a consumer whose server died is
	// replaced within seconds, from the last sequence read.
	it, err := cons.Messages(jetstream.PullMaxMessages(256), jetstream.PullHeartbeat(followHeartbeat))
	if err != nil {
		return fmt.Errorf("bus: follow %s: %w", subj, err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer func() {
		it.Stop()
		if info := cons.CachedInfo(); info != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = b.js.DeleteConsumer(dctx, subjects.StreamEvents, info.Name)
		}
	}()
	var cursor atomic.Uint64 // the last stream sequence read
	cursor.Store(*after)
	var stalled, busy atomic.Bool // busy: fn has a record (a slow client is no stall)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go b.watchTenantStall(wctx, subj, &cursor, &busy, &stalled, it.Stop)
	for {
		m, err := it.Next()
		if err != nil {
			if stalled.Load() && ctx.Err() == nil {
				return errStalled
			}
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return ctx.Err()
			}
			return fmt.Errorf("bus: follow %s: %w", subj, err)
		}
		md, err := m.Metadata()
		if err != nil {
			continue
		}
		cursor.Store(md.Sequence.Stream)
		*after = md.Sequence.Stream
		env, err := events.Decode(m.Headers(), m.Data())
		if err != nil {
			b.log.Warn("event not delivered to clients: malformed", "subject", m.Subject(), "offset", md.Sequence.Stream,
				"type", lookupHeader(m.Headers(), events.HeaderType), "source", lookupHeader(m.Headers(), events.HeaderSource), "err", err)
			continue
		}
		busy.Store(true)
		err = fn(ctx, Record{Offset: md.Sequence.Stream, Envelope: env, Pending: md.NumPending})
		busy.Store(false)
		if err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
}

// watchTenantStall is watchStall for a tenant's filter: every
// followStallCheck in which the cursor stood still, it asks whether the
// tenant has an event past it; then it marks the follower stalled and
// stops its iterator.
func (b *Bus) watchTenantStall(ctx context.Context, subj string, cursor *atomic.Uint64, busy, stalled *atomic.Bool, stop func()) {
	t := time.NewTicker(followStallCheck)
	defer t.Stop()
	seen := cursor.Load()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := cursor.Load()
		if now != seen || busy.Load() {
			seen = now
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, followStallCheck/2)
		last, err := b.lastOffsetOf(qctx, subj)
		cancel()
		if err == nil && last > now && cursor.Load() == now && !busy.Load() {
			stalled.Store(true)
			stop()
			return
		}
	}
}

// TenantLastOffset returns the offset of the newest event of any of a
// tenant's workflows, 0 if it has none. Safe for concurrent use.
func (b *Bus) TenantLastOffset(ctx context.Context, tenant string) (uint64, error) {
	subj, err := subjects.TenantEvents(tenant)
	if err != nil {
		return 0, err
	}
	return b.lastOffsetOf(ctx, subj)
}

// lastOffsetOf is the sequence of the newest event on subj (a wildcard
// filter: the server answers from its subject index), 0 if none.
func (b *Bus) lastOffsetOf(ctx context.Context, subj string) (uint64, error) {
	s, err := b.js.Stream(ctx, subjects.StreamEvents)
	if err != nil {
		return 0, fmt.Errorf("bus: events stream: %w", err)
	}
	m, err := s.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("bus: last event of %s: %w", subj, err)
	}
	return m.Sequence, nil
}

// EventsRange returns the sequences of the events stream's oldest and
// newest stored events, for every tenant: first is last+1 when the stream
// is empty. A tenant-wide cursor before first-1 may have missed events
// that expired; one at last is caught up. Safe for concurrent use.
func (b *Bus) EventsRange(ctx context.Context) (first, last uint64, err error) {
	s, err := b.js.Stream(ctx, subjects.StreamEvents)
	if err != nil {
		return 0, 0, fmt.Errorf("bus: events stream: %w", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("bus: events stream info: %w", err)
	}
	first, last = info.State.FirstSeq, info.State.LastSeq
	if info.State.Msgs == 0 {
		first = last + 1
	}
	return first, last, nil
}
