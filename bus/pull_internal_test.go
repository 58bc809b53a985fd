package bus

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPullStatus maps the status messages a pull request is answered with
// (ADR-13) as nats.go does.
func TestPullStatus(t *testing.T) {
	for _, tc := range []struct {
		status, description string
		want                error
	}{
		{"100", "Idle Heartbeat", nil},
		{"404", "No Messages", nats.ErrTimeout},
		{"408", "Request Timeout", nats.ErrTimeout},
		{"503", "", nats.ErrNoResponders},
		{"409", "Consumer Deleted", jetstream.ErrConsumerDeleted},
		{"409", "Leadership Change", jetstream.ErrConsumerLeadershipChanged},
		{"409", "Server Shutdown", jetstream.ErrServerShutdown},
	} {
		if got := pullStatus(tc.status, tc.description); !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("pullStatus(%s %s) = %v, want %v", tc.status, tc.description, got, tc.want)
		}
	}
	for _, s := range [][2]string{{"409", "Exceeded MaxWaiting"}, {"400", "Bad Request"}} {
		err := pullStatus(s[0], s[1])
		if err == nil || !strings.Contains(err.Error(), s[1]) {
			t.Errorf("pullStatus(%s %s) = %v, want an error that names it", s[0], s[1], err)
		}
	}
}
