package bus

import (
	"context"
	"fmt"
)

// ConsumerBacklog reports a durable consumer's pending (stored, not yet
// delivered) and ack-pending (delivered, not yet acked) counts, read from
// the server now: the step backlog of a capability.
func (b *Bus) ConsumerBacklog(ctx context.Context, stream, name string) (pending, ackPending uint64, err error) {
	c, err := b.js.Consumer(ctx, stream, name)
	if err != nil {
		return 0, 0, fmt.Errorf("bus: consumer %s on %s: %w", name, stream, err)
	}
	info := c.CachedInfo() // fetched by Consumer just now
	return info.NumPending, uint64(info.NumAckPending), nil
}
