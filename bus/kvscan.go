package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/subjects"
)

// LeasesBucket is the configuration of subjects.BucketLeases for a
// replication factor: one revision per key, on file.
func LeasesBucket(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket: subjects.BucketLeases, Description: "agentbus leases among orchestrators (the checkpoint scan)",
		History: 1, Storage: jetstream.FileStorage, Replicas: replicas,
	}
}

// checkpointsReplicas is the replica count of subjects.BucketCheckpoints
// (1 if its status does not say): what a bucket or store created after
// provisioning takes, so that it is replicated like the rest.
func (b *Bus) checkpointsReplicas(ctx context.Context) (int, error) {
	ref, err := b.js.KeyValue(ctx, subjects.BucketCheckpoints)
	if err != nil {
		return 0, err
	}
	if st, err := ref.Status(ctx); err == nil {
		if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok {
			return bs.StreamInfo().Config.Replicas, nil
		}
	}
	return 1, nil
}

// Leases opens subjects.BucketLeases, creating it with the replicas of
// subjects.BucketCheckpoints if it does not exist, so that a deployment
// provisioned before the bucket existed gains it on the first
// orchestrator's start.
func (b *Bus) Leases(ctx context.Context) (*KV, error) {
	kv, err := b.js.KeyValue(ctx, subjects.BucketLeases)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		replicas, rerr := b.checkpointsReplicas(ctx)
		if rerr != nil {
			return nil, fmt.Errorf("bus: bucket %s (to size %s): %w", subjects.BucketCheckpoints, subjects.BucketLeases, rerr)
		}
		kv, err = b.js.CreateKeyValue(ctx, LeasesBucket(replicas))
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = b.js.KeyValue(ctx, subjects.BucketLeases)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("bus: bucket %s: %w", subjects.BucketLeases, err)
	}
	return &KV{kv: kv, js: b.js, nc: b.nc, bucket: subjects.BucketLeases}, nil
}

// Stored is one revision of a key as the bucket's stream holds it, without
// its value.
type Stored struct {
	Key string
	// Revision is the revision's stream sequence (Entry.Revision).
	Revision uint64
	// Time is when the server stored it.
	Time time.Time
	// Deleted marks a delete or purge.
	Deleted bool
}

// Revisions reads, oldest first and without their values, the revisions
// stored at sequence from or later and before the time before, at most max
// of them: a cursor over everything the bucket stored, for a scan that must
// not read every key's value. It costs one short-lived consumer and a
// request per 256 revisions.
func (s *KV) Revisions(ctx context.Context, from uint64, max int, before time.Time) ([]Stored, error) {
	stream := "KV_" + s.bucket
	prefix := "$KV." + s.bucket + "."
	cfg := jetstream.ConsumerConfig{
		AckPolicy: jetstream.AckNonePolicy, HeadersOnly: true, MemoryStorage: true,
		FilterSubject: prefix + ">", InactiveThreshold: time.Minute, DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	if from > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	cons, err := s.js.CreateConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("bus: read %s: %w", s.bucket, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.js.DeleteConsumer(dctx, stream, cons.CachedInfo().Name)
	}()
	var out []Stored
	for len(out) < max {
		batch, err := cons.FetchNoWait(min(256, max-len(out)))
		if err != nil {
			return nil, fmt.Errorf("bus: read %s: %w", s.bucket, err)
		}
		n, stop := 0, false
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil || stop || !md.Timestamp.Before(before) {
				stop = true
				continue
			}
			op := m.Headers().Get("KV-Operation")
			out = append(out, Stored{
				Key: strings.TrimPrefix(m.Subject(), prefix), Revision: md.Sequence.Stream, Time: md.Timestamp,
				Deleted: op == "DEL" || op == "PURGE",
			})
			if md.NumPending == 0 {
				stop = true
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, fmt.Errorf("bus: read %s: %w", s.bucket, err)
		}
		if n == 0 || stop {
			break
		}
	}
	return out, nil
}
