package bus

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/subjects"
)

// ConcurrencyBucket is the configuration of subjects.BucketConcurrency
// for a replication factor: one revision per key, kept until rewritten (a
// key's workflows may wait for days).
func ConcurrencyBucket(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket: subjects.BucketConcurrency, Description: "agentbus concurrency keys of submissions: running and waiting workflows, per tenant",
		History: 1, Storage: jetstream.FileStorage, Replicas: replicas,
	}
}

// Concurrency opens subjects.BucketConcurrency, creating it with the
// replicas of subjects.BucketCheckpoints if it does not exist (as
// Idempotency does), so that a deployment provisioned before it existed
// gains it on the first submission with a concurrency key.
func (b *Bus) Concurrency(ctx context.Context) (*KV, error) {
	return b.openLazily(ctx, subjects.BucketConcurrency, ConcurrencyBucket)
}
