package bus

import (
	"context"
	"errors"
	"fmt"
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
// FollowTenant also ends with nil when the consumer is closed under it
// (the connection draining); a caller that expects no end should treat
// that as a failure. Safe for concurrent use.
func (b *Bus) FollowTenant(ctx context.Context, tenant string, after uint64, fn FollowFunc) error {
	subj, err := subjects.TenantEvents(tenant)
	if err != nil {
		return err
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}, DeliverPolicy: jetstream.DeliverAllPolicy,
		InactiveThreshold: time.Minute}
	if after > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = after + 1
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
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return ctx.Err()
			}
			return fmt.Errorf("bus: follow %s: %w", subj, err)
		}
		md, err := m.Metadata()
		if err != nil {
			continue
		}
		env, err := events.Decode(m.Headers(), m.Data())
		if err != nil {
			b.log.Warn("event not delivered to clients: malformed", "subject", m.Subject(), "offset", md.Sequence.Stream,
				"type", lookupHeader(m.Headers(), events.HeaderType), "source", lookupHeader(m.Headers(), events.HeaderSource), "err", err)
			continue
		}
		if err := fn(ctx, Record{Offset: md.Sequence.Stream, Envelope: env, Pending: md.NumPending}); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
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
