package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

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
	return b.followLoop(ctx, subj, after, fn)
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
