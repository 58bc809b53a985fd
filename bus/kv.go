package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// KV errors, independent of nats.go.
var (
	// ErrNotFound is returned for a key that does not exist (or was deleted).
	ErrNotFound = errors.New("bus: key not found")
	// ErrConflict is returned when a key changed since the revision given
	// (optimistic concurrency) or already exists on Create.
	ErrConflict = errors.New("bus: revision conflict")
)

// Entry is one revision of a KV key.
type Entry struct {
	Key      string
	Value    []byte
	Revision uint64
}

// KV is a JetStream key-value bucket with optimistic concurrency. It is safe
// for concurrent use.
type KV struct {
	kv jetstream.KeyValue
}

// KV opens a provisioned bucket.
func (b *Bus) KV(ctx context.Context, bucket string) (*KV, error) {
	kv, err := b.js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("bus: bucket %s: %w", bucket, err)
	}
	return &KV{kv: kv}, nil
}

// Get returns the newest revision of key.
func (s *KV) Get(ctx context.Context, key string) (Entry, error) {
	e, err := s.kv.Get(ctx, key)
	if err != nil {
		return Entry{}, mapKVErr(key, err)
	}
	return Entry{Key: key, Value: e.Value(), Revision: e.Revision()}, nil
}

// Create stores key only if it does not exist.
func (s *KV) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	rev, err := s.kv.Create(ctx, key, value)
	return rev, mapKVErr(key, err)
}

// Update stores key only if its newest revision is still rev.
func (s *KV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	n, err := s.kv.Update(ctx, key, value, rev)
	return n, mapKVErr(key, err)
}

// Put stores key unconditionally.
func (s *KV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	n, err := s.kv.Put(ctx, key, value)
	return n, mapKVErr(key, err)
}

// History returns every kept revision of key, oldest first.
func (s *KV) History(ctx context.Context, key string) ([]Entry, error) {
	hs, err := s.kv.History(ctx, key)
	if err != nil {
		return nil, mapKVErr(key, err)
	}
	out := make([]Entry, 0, len(hs))
	for _, e := range hs {
		if e.Operation() != jetstream.KeyValuePut {
			continue
		}
		out = append(out, Entry{Key: key, Value: e.Value(), Revision: e.Revision()})
	}
	return out, nil
}

func mapKVErr(key string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyExists):
		return fmt.Errorf("%w: %s", ErrConflict, key)
	default:
		return fmt.Errorf("bus: key %s: %w", key, err)
	}
}

// Wait blocks until key exists and returns its newest revision, or returns
// ctx's error. It watches the key instead of polling.
func (s *KV) Wait(ctx context.Context, key string) (Entry, error) {
	w, err := s.kv.Watch(ctx, key)
	if err != nil {
		return Entry{}, mapKVErr(key, err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return Entry{}, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return Entry{}, fmt.Errorf("bus: watch %s: closed", key)
			}
			if e != nil && e.Operation() == jetstream.KeyValuePut {
				return Entry{Key: key, Value: e.Value(), Revision: e.Revision()}, nil
			}
		}
	}
}
