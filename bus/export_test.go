package bus

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/subjects"
)

// NewPullerOn is NewPuller on a connection of the test's, with the
// heartbeat it wants.
func NewPullerOn(nc *nats.Conn, stream, consumer string, heartbeat time.Duration) (*Puller, error) {
	return newPuller(nc, stream, consumer, heartbeat)
}

// FollowWithConsumer is Follow through an ordered consumer, as on an
// events stream that does not republish.
func (b *Bus) FollowWithConsumer(ctx context.Context, tenant, workflow string, after uint64, fn FollowFunc) error {
	subj, err := subjects.Events(tenant, workflow)
	if err != nil {
		return err
	}
	return b.followLoop(ctx, subj, after, fn)
}

// DropLive makes b's live followers drop, unread, every live event for
// which drop returns true, as a reconnect or a slow reader would.
func (b *Bus) DropLive(drop func(seq uint64) bool) { b.dropLive = drop }

// BeforeWatch makes b's live followers run fn once they have read what
// was stored, before they start watching for what they miss.
func (b *Bus) BeforeWatch(fn func()) { b.beforeWatch = fn }
