package bus

import (
	"time"

	"github.com/nats-io/nats.go"
)

// NewPullerOn is NewPuller on a connection of the test's, with the
// heartbeat it wants.
func NewPullerOn(nc *nats.Conn, stream, consumer string, heartbeat time.Duration) (*Puller, error) {
	return newPuller(nc, stream, consumer, heartbeat)
}
