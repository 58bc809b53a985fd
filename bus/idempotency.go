package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/subjects"
)

// IdempotencyTTL is how long subjects.BucketIdempotency keeps a key: a
// day, api.IdempotencyWindow.
const IdempotencyTTL = 24 * time.Hour

// IdempotencyBucket is the configuration of subjects.BucketIdempotency for
// a replication factor: one revision per key, each dropped IdempotencyTTL
// after it was written.
func IdempotencyBucket(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket: subjects.BucketIdempotency, Description: "agentbus idempotency keys of submissions, per tenant",
		History: 1, TTL: IdempotencyTTL, Storage: jetstream.FileStorage, Replicas: replicas,
	}
}

// Idempotency opens subjects.BucketIdempotency, creating it with the
// replicas of subjects.BucketCheckpoints if it does not exist (as Leases
// does), so that a deployment provisioned before it existed gains it on
// the first submission with a key. The bucket as it exists is used as it
// is.
func (b *Bus) Idempotency(ctx context.Context) (*KV, error) {
	return b.openLazily(ctx, subjects.BucketIdempotency, IdempotencyBucket)
}

// openLazily opens a bucket Provision makes, creating it with the
// replicas of subjects.BucketCheckpoints (1 on a bare server) if a
// deployment provisioned before it lacks it; the bucket as it exists is
// used as it is.
func (b *Bus) openLazily(ctx context.Context, bucket string, config func(replicas int) jetstream.KeyValueConfig) (*KV, error) {
	kv, err := b.js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		replicas, rerr := b.checkpointsReplicas(ctx)
		if rerr != nil {
			replicas = 1 // not provisioned at all: a test's bare server
		}
		_, err = retryElection(ctx, b.electionWait, func(ctx context.Context) (err error) {
			kv, err = b.js.CreateKeyValue(ctx, config(replicas))
			if errors.Is(err, jetstream.ErrBucketExists) {
				kv, err = b.js.KeyValue(ctx, bucket)
			}
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("bus: bucket %s: %w", bucket, err)
	}
	return &KV{kv: kv, js: b.js, nc: b.nc, bucket: bucket, ops: b.ops}, nil
}

// Claimed returns the value key holds, or nil when it holds none; it reads
// through the bucket's leader (GetCurrent), so a key claimed a moment ago
// on another replica is seen.
func (s *KV) Claimed(ctx context.Context, key string) ([]byte, error) {
	e, err := s.GetCurrent(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return e.Value, nil
}

// Claim stores value under key unless the key holds a value already (a
// KV create: of concurrent claims exactly one stores), and returns nil;
// otherwise it returns the value held, which it leaves as it is.
func (s *KV) Claim(ctx context.Context, key string, value []byte) ([]byte, error) {
	// On a cluster a create can conflict with another's create the leader
	// has not applied yet, which the read then does not find: try again,
	// a little later each time, within ctx.
	for attempt := range 8 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(5<<attempt) * time.Millisecond):
			}
		}
		_, err := s.Create(ctx, key, value)
		if err == nil {
			return nil, nil
		}
		if !errors.Is(err, ErrConflict) {
			return nil, err
		}
		held, err := s.Claimed(ctx, key)
		if err != nil || held != nil {
			return held, err
		}
		// Deleted or expired between the create and the read: again.
	}
	return nil, fmt.Errorf("bus: claim %s: the key kept changing", key)
}
