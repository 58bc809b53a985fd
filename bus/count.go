package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Stored counts the messages stream holds on the subjects filter matches
// (wildcards allowed), from the stream's info with a subject filter: the
// server counts, no message is read. A stream that does not exist is
// ErrNotFound.
func (b *Bus) Stored(ctx context.Context, stream, filter string) (uint64, error) {
	s, err := b.js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, fmt.Errorf("%w: stream %s", ErrNotFound, stream)
	}
	if err != nil {
		return 0, fmt.Errorf("bus: stream %s: %w", stream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return 0, fmt.Errorf("bus: stream %s: %w", stream, err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n, nil
}

// StoredHeader returns one header's value from each message stream holds
// on the subject subj (no wildcards), at most max of them, oldest first;
// it reads them one by one, so it is for subjects that hold few (a work
// queue's backlog). A stream that does not exist is ErrNotFound.
func (b *Bus) StoredHeader(ctx context.Context, stream, subj, header string, max int) ([]string, error) {
	n, err := b.Stored(ctx, stream, subj)
	if err != nil || n == 0 {
		return nil, err
	}
	s, err := b.js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", stream, err)
	}
	var out []string
	for seq := uint64(1); len(out) < min(int(n), max); {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break // taken meanwhile: what is left is all there is
		}
		if err != nil {
			return out, fmt.Errorf("bus: stream %s: %w", stream, err)
		}
		out = append(out, m.Header.Get(header))
		seq = m.Sequence + 1
	}
	return out, nil
}
