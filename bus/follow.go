package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
// from its first event) with an ordered consumer filtered to the workflow's
// subject, then follows new ones until ctx ends or fn returns an error
// (ErrStop ends it with nil). Records that fail to decode (most likely
// published by an agent outside Go that left out a header or a required
// field) are not delivered to fn, and are logged with their subject, offset,
// type, source and what was wrong, at a JSON pointer.
func (b *Bus) Follow(ctx context.Context, tenant, workflow string, after uint64, fn FollowFunc) error {
	subj, err := subjects.Events(tenant, workflow)
	if err != nil {
		return err
	}
	// A follower that dies without cleaning up leaves its consumer behind
	// for InactiveThreshold only.
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
	// Idle heartbeats every 2s: when the server hosting the consumer dies
	// (a cluster losing a node), two missed ones reset the ordered
	// consumer on a live server within seconds, not the default 30s.
	it, err := cons.Messages(jetstream.PullMaxMessages(256), jetstream.PullHeartbeat(followHeartbeat))
	if err != nil {
		return fmt.Errorf("bus: follow %s: %w", subj, err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer func() {
		// Stopping an ordered consumer leaves it on the server until its
		// inactivity threshold; delete it now so followers never pile up.
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
			// Most likely an agent outside Go that left out a header or a
			// required field: say which, where, and that no client sees it.
			b.log.Warn("event not delivered to clients: malformed", "subject", subj, "offset", md.Sequence.Stream,
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
		return Record{}, nil
	}
	if err != nil {
		return Record{}, fmt.Errorf("bus: last event of %s: %w", subj, err)
	}
	env, err := events.Decode(m.Header, m.Data)
	if err != nil {
		// The offset still counts (a cursor may point past it), but the
		// event itself is not one a client will see: say so, as Follow does.
		b.log.Warn("event not delivered to clients: malformed", "subject", subj, "offset", m.Sequence,
			"type", lookupHeader(m.Header, events.HeaderType), "source", lookupHeader(m.Header, events.HeaderSource), "err", err)
		return Record{Offset: m.Sequence}, nil
	}
	return Record{Offset: m.Sequence, Envelope: env}, nil
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
