package bus

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
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
	kv     jetstream.KeyValue
	js     jetstream.JetStream
	nc     *nats.Conn
	bucket string
	ops    *ops
}

// KV opens a provisioned bucket.
func (b *Bus) KV(ctx context.Context, bucket string) (*KV, error) {
	kv, err := b.js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("bus: bucket %s: %w", bucket, err)
	}
	return &KV{kv: kv, js: b.js, nc: b.nc, bucket: bucket, ops: b.ops}, nil
}

// PutTTL stores key with its own time to live: unless put again within ttl,
// the key disappears and watchers see it deleted. JetStream counts TTLs in
// whole seconds, so ttl is rounded up to the next second (at least 1s). The
// bucket must allow per-key TTLs (LimitMarkerTTL), as AGENTBUS_AGENTS does.
func (s *KV) PutTTL(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error) {
	s.ops.write()
	ttl = max(time.Second, (ttl + time.Second - 1).Truncate(time.Second))
	m := nats.NewMsg("$KV." + s.bucket + "." + key)
	m.Data = value
	ack, err := s.js.PublishMsg(ctx, m, jetstream.WithMsgTTL(ttl))
	if err != nil {
		return 0, fmt.Errorf("bus: put %s with ttl: %w", key, err)
	}
	return ack.Sequence, nil
}

// Delete removes key.
func (s *KV) Delete(ctx context.Context, key string) error {
	s.ops.write()
	return mapKVErr(key, s.kv.Delete(ctx, key))
}

// List returns the newest revision of every key, in key order.
func (s *KV) List(ctx context.Context) ([]Entry, error) { return s.ListMatching(ctx, ">") }

// ListMatching returns the newest revision of every key matching pattern
// (NATS wildcards: "acme.*"), in key order.
func (s *KV) ListMatching(ctx context.Context, pattern string) ([]Entry, error) {
	w, err := s.kv.Watch(ctx, pattern, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("bus: list %s: %w", s.bucket, err)
	}
	defer func() { _ = w.Stop() }()
	var out []Entry
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("bus: list %s: watcher closed", s.bucket)
			}
			if e == nil { // initial values delivered
				sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
				return out, nil
			}
			if e.Operation() == jetstream.KeyValuePut {
				out = append(out, Entry{Key: e.Key(), Value: e.Value(), Revision: e.Revision()})
			}
		}
	}
}

// Get returns the newest revision of key.
//
// A bucket's reads are direct gets, which any replica may answer; on a
// cluster a replica restarted on its store answers before it has caught
// up, so "not found" may only mean "not yet here" (an orchestrator once
// took a running workflow's reply for an unknown workflow's). So a key a
// direct get did not find is looked up again on the bucket's leader, and
// only its answer is final. A stale value, also possible, is caught by the
// revision check of the write that follows it.
func (s *KV) Get(ctx context.Context, key string) (Entry, error) {
	s.ops.read()
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return s.getFromLeader(ctx, key)
	}
	if err != nil {
		return Entry{}, mapKVErr(key, err)
	}
	return Entry{Key: key, Value: e.Value(), Revision: e.Revision()}, nil
}

// GetCurrent is Get read through the bucket's leader only: never a
// replica that has not caught up. A writer whose revision check failed
// reads with it, since a direct get may give it the same stale revision
// again.
func (s *KV) GetCurrent(ctx context.Context, key string) (Entry, error) {
	return s.getFromLeader(ctx, key)
}

// freshWait bounds GetFresh's wait for the bucket's leader.
const freshWait = 2 * time.Second

// GetFresh is Get for a reader who must not go back in time: a client
// that saw a workflow move on and then asks for its state. It reads
// through the bucket's leader — a replica that restarted answers direct
// gets with what it held until it has caught up — and, should the leader
// not answer within freshWait (an election), reads as Get does rather
// than fail: possibly stale, but available.
func (s *KV) GetFresh(ctx context.Context, key string) (Entry, error) {
	lctx, cancel := context.WithTimeout(ctx, freshWait)
	e, err := s.getFromLeader(lctx, key)
	cancel()
	if err == nil || errors.Is(err, ErrNotFound) || ctx.Err() != nil {
		return e, err
	}
	return s.Get(ctx, key)
}

// getFromLeader reads key's newest revision through the bucket stream's
// leader ($JS.API.STREAM.MSG.GET, never a direct get).
func (s *KV) getFromLeader(ctx context.Context, key string) (Entry, error) {
	s.ops.read()
	m, err := leaderGet(ctx, s.nc, "KV_"+s.bucket, map[string]any{"last_by_subj": "$KV." + s.bucket + "." + key})
	if errors.Is(err, errNoMsg) {
		return Entry{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("bus: key %s: %w", key, err)
	}
	if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" || m.Header.Get(jetstream.MarkerReasonHeader) != "" {
		return Entry{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return Entry{Key: key, Value: m.Data, Revision: m.Seq}, nil
}

// Create stores key only if it does not exist.
func (s *KV) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	s.ops.write()
	rev, err := s.kv.Create(ctx, key, value)
	return rev, mapKVErr(key, err)
}

// Update stores key only if its newest revision is still rev.
func (s *KV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	s.ops.write()
	n, err := s.kv.Update(ctx, key, value, rev)
	return n, mapKVErr(key, err)
}

// Put stores key unconditionally.
func (s *KV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	s.ops.write()
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

// Watch calls fn with every key's newest value (deleted true when a key is
// deleted or expires), first for every existing key, then for every change,
// until ctx ends. It returns once the existing keys have been delivered, so
// the caller's view is complete from then on. fn runs on one goroutine.
func (s *KV) Watch(ctx context.Context, fn func(e Entry, deleted bool)) error {
	_, err := s.WatchDone(ctx, fn)
	return err
}

// WatchDone is Watch that also returns a channel closed once the watch has
// ended and fn will not be called again: ctx ended, or the watcher stopped
// on its own (the connection closed, or its consumer could not be made
// again after a server restart). A long-lived reader watches again when it
// closes while its ctx is live; the new watch delivers every existing key
// again.
func (s *KV) WatchDone(ctx context.Context, fn func(e Entry, deleted bool)) (<-chan struct{}, error) {
	w, err := s.kv.WatchAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("bus: watch %s: %w", s.bucket, err)
	}
	initial, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = w.Stop() }()
		synced := false
		for {
			select {
			case <-ctx.Done():
				if !synced {
					close(initial)
				}
				return
			case e, ok := <-w.Updates():
				if !ok {
					if !synced {
						close(initial)
					}
					return
				}
				if e == nil {
					if !synced {
						synced = true
						close(initial)
					}
					continue
				}
				fn(Entry{Key: e.Key(), Value: e.Value(), Revision: e.Revision()}, e.Operation() != jetstream.KeyValuePut)
			}
		}
	}()
	select {
	case <-initial:
		return done, ctx.Err()
	case <-ctx.Done():
		return done, ctx.Err()
	}
}
