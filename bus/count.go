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
