package bus

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
)

// Puller is a Consume loop's puller (pull.go), for tests of its own.
type Puller = puller

// Consumed is what a Puller hands out.
type Consumed = consumed

// NewPuller is newPuller, with the heartbeat a test wants.
func NewPuller(nc *nats.Conn, stream, consumer string, heartbeat time.Duration) (*Puller, error) {
	return newPuller(nc, stream, consumer, heartbeat)
}

// Next is next.
func (p *puller) Next(ctx context.Context) (Consumed, error) { return p.next(ctx) }

// Close is close.
func (p *puller) Close() { p.close() }
