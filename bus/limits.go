package bus

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/subjects"
)

// LimitsBucket is the configuration of subjects.BucketLimits for a
// replication factor: one revision per key, kept until rewritten.
func LimitsBucket(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket: subjects.BucketLimits, Description: "agentbus flow control's shared counters: tenants' LLM token buckets",
		History: 1, Storage: jetstream.FileStorage, Replicas: replicas,
	}
}

// Limits opens subjects.BucketLimits, creating it with the replicas of
// subjects.BucketCheckpoints if it does not exist (as Concurrency does).
func (b *Bus) Limits(ctx context.Context) (*KV, error) {
	return b.openLazily(ctx, subjects.BucketLimits, LimitsBucket)
}
