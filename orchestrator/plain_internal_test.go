package orchestrator

import (
	"testing"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
)

// TestPlainCheckpointsFollowTheStore: an orchestrator stores plain
// checkpoints when the servers S2-compress the bucket, zstd frames when
// they do not, whatever --compress-streams says (a store provisioned
// before it stays uncompressed).
func TestPlainCheckpointsFollowTheStore(t *testing.T) {
	for _, compress := range []bool{false, true} {
		env := bustest.NewWithOptions(t, bustest.Options{Streams: bus.StreamsConfig{Compress: compress}})
		o := newTestOrchestrator(t, env, Config{})
		if o.cfg.PlainCheckpoints != compress {
			t.Errorf("bucket compressed %v: plain checkpoints %v", compress, o.cfg.PlainCheckpoints)
		}
	}
}
