package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/subjects"
)

// OldestOffset returns the offset of a workflow's oldest retained event, 0
// if none is retained. Events older than the stream's MaxAge (or deleted)
// are gone; a subscriber whose offset precedes this one may have missed
// events and must be told so (DESIGN.md §2). Safe for concurrent use.
func (b *Bus) OldestOffset(ctx context.Context, tenant, workflow string) (uint64, error) {
	subj, err := subjects.Events(tenant, workflow)
	if err != nil {
		return 0, err
	}
	s, err := b.js.Stream(ctx, subjects.StreamEvents)
	if err != nil {
		return 0, fmt.Errorf("bus: events stream: %w", err)
	}
	// The first message on subj with a sequence >= 1: the server answers
	// from its per-subject index, without a scan.
	m, err := s.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subj))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		// Maybe a direct get answered by a replica still catching up:
		// "none" is asked again of the leader (LastRecord).
		lm, lerr := leaderGet(ctx, b.nc, subjects.StreamEvents, map[string]any{"seq": 1, "next_by_subj": subj})
		if errors.Is(lerr, errNoMsg) {
			return 0, nil
		}
		if lerr != nil {
			return 0, fmt.Errorf("bus: oldest event of %s: %w", subj, lerr)
		}
		return lm.Seq, nil
	}
	if err != nil {
		return 0, fmt.Errorf("bus: oldest event of %s: %w", subj, err)
	}
	return m.Sequence, nil
}
