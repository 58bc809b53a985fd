package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/llm/vector"
	"github.com/agentbus/agentbus/subjects"
)

// Registry reads and writes KV AGENTBUS_AGENTS. Writes (Put, Remove) and
// List go to the bucket; Discover, Catalog and Serves read an in-memory
// index of the bucket that a KV watch keeps current (index.go, watch.go),
// started by the first of them. A Registry is safe for concurrent use;
// Close stops its watch.
type Registry struct {
	cfg      Config
	kv       *bus.KV
	embedder vector.Embedder
	now      func() time.Time
	idx      *index

	startOnce sync.Once
	stop      context.CancelFunc
	// synced closes once the index holds the bucket; stopped once its
	// watch has ended for good; failed if the first watch failed, with
	// failure.
	synced, stopped, failed chan struct{}
	failOnce                sync.Once
	failure                 error
	// embedMu makes concurrent queries embed pending cards once.
	embedMu sync.Mutex
	// schemas caches compiled input schemas (CheckInputs).
	schemas schemaCache
	// unlisted is when a plan's capability the index had not heard of
	// was last looked for in the bucket (capability → time): an agent
	// that never registers (a bare NATS worker) is looked for once a
	// second at most, not on every submission.
	unlisted sync.Map
}

// New opens the registry with embedder (nil means vector.LocalEmbedder); see
// Open.
func New(ctx context.Context, b *bus.Bus, embedder vector.Embedder) (*Registry, error) {
	return Open(ctx, Config{Bus: b, Embedder: embedder})
}

// Open checks cfg and opens the registry's bucket. The index is not built
// until the first Discover, Catalog or Serves, so workers, which only
// write, never hold one.
func Open(ctx context.Context, cfg Config) (*Registry, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kv, err := cfg.Bus.KV(ctx, subjects.BucketAgents)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	return &Registry{cfg: cfg, kv: kv, embedder: cfg.Embedder, now: cfg.Now, idx: newIndex(cfg.Embedder.Name()),
		synced: make(chan struct{}), stopped: make(chan struct{}), failed: make(chan struct{})}, nil
}

// Embedder is the embedder queries are embedded with.
func (r *Registry) Embedder() vector.Embedder { return r.embedder }

// Put stores a registration that expires unless put again within ttl.
func (r *Registry) Put(ctx context.Context, reg Registration, ttl time.Duration) error {
	b, err := json.Marshal(reg)
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	if _, err := r.kv.PutTTL(ctx, key(reg.Instance), b, ttl); err != nil {
		return fmt.Errorf("discovery: register %s: %w", reg.Instance, err)
	}
	return nil
}

// Remove deletes a registration (a worker stopping cleanly).
func (r *Registry) Remove(ctx context.Context, instance string) error {
	err := r.kv.Delete(ctx, key(instance))
	if err != nil && !errors.Is(err, bus.ErrNotFound) {
		return fmt.Errorf("discovery: unregister %s: %w", instance, err)
	}
	return nil
}

// key makes an instance id a valid KV key.
func key(instance string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, instance)
}

// Instance is a registration with its health now.
type Instance struct {
	Registration
	Health Health `json:"health"`
}

// List returns every registered instance with its health, sorted by name
// then instance. Embeddings are left out.
func (r *Registry) List(ctx context.Context) ([]Instance, error) {
	entries, err := r.kv.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	now := r.now()
	out := make([]Instance, 0, len(entries))
	for _, e := range entries {
		var reg Registration
		if json.Unmarshal(e.Value, &reg) != nil {
			continue // not ours; never fail a listing over one bad record
		}
		reg.Embedding = nil
		out = append(out, Instance{Registration: reg, Health: reg.Health(now)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Instance < out[j].Instance
	})
	return out, nil
}

// Serves reports whether any registered instance, whatever its health,
// offers capability. It asks the index, and the bucket itself when the
// index says no, so that a registration made a moment ago, which the
// index's watch may not have delivered yet, still counts.
func (r *Registry) Serves(ctx context.Context, capability string) (bool, error) {
	if ix, err := r.ready(ctx); err == nil && ix.serves(capability) {
		return true, nil
	}
	list, err := r.List(ctx)
	if err != nil {
		return false, err
	}
	for _, in := range list {
		if slices.Contains(in.Capabilities, capability) {
			return true, nil
		}
	}
	return false, nil
}

// Match is one agent ranked against a query.
type Match struct {
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Description  string   `json:"description"`
	Capabilities []string `json:"capabilities"`
	Examples     []string `json:"examples,omitempty"`
	// Score is the cosine similarity of the query and the agent's card.
	Score float64 `json:"score"`
	// Rank orders matches: Score less a penalty, below Config.Margin
	// unless the agent has no healthy instance, for load and health (see
	// search.go). Matches come best Rank first.
	Rank float64 `json:"rank"`
	// Instances counts live (healthy or unhealthy) instances.
	Instances int `json:"instances"`
	Healthy   int `json:"healthy"`
	// InFlight is the steps running on healthy instances; Load is
	// InFlight per healthy instance.
	InFlight int64   `json:"in_flight"`
	Load     float64 `json:"load"`
}

// Discover embeds query and returns the k (DefaultK when k <= 0) live
// agents, grouped by name, that best fit it, best first: by similarity of
// the query to each agent's card, preferring, among agents about as
// similar, the healthy and less loaded ones (see Match.Rank). It searches
// the index, not the bucket: cards registered with another embedder are
// embedded once with the registry's, on the first query that needs them.
func (r *Registry) Discover(ctx context.Context, query string, k int) ([]Match, error) {
	if k <= 0 {
		k = DefaultK
	}
	ix, err := r.ready(ctx)
	if err != nil {
		return nil, err
	}
	qv, err := r.embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("discovery: embed query with %s: %w", r.embedder.Name(), err)
	}
	if err := r.embedPending(ctx, ix); err != nil {
		return nil, err
	}
	return ix.top(normalised(qv[0]), k, r.now(), r.cfg.Margin), nil
}

// Catalog returns every live agent (healthy or unhealthy instances) with
// its card and live counts, by name, unranked: what is served, for a
// planner that must know every capability without being handed every
// card.
func (r *Registry) Catalog(ctx context.Context) ([]Match, error) {
	ix, err := r.ready(ctx)
	if err != nil {
		return nil, err
	}
	return ix.catalog(r.now()), nil
}

// embedBatch bounds one request to the embedder.
const embedBatch = 64

// embedPending embeds, with the registry's embedder, the cards registered
// with another one that the index has not seen before.
func (r *Registry) embedPending(ctx context.Context, ix *index) error {
	if len(ix.pending()) == 0 {
		return nil
	}
	r.embedMu.Lock()
	defer r.embedMu.Unlock()
	texts := ix.pending() // another query may have embedded them meanwhile
	for i := 0; i < len(texts); i += embedBatch {
		batch := texts[i:min(i+embedBatch, len(texts))]
		vs, err := r.embedder.Embed(ctx, batch)
		if err != nil {
			return fmt.Errorf("discovery: embed %d agents' cards with %s: %w", len(batch), r.embedder.Name(), err)
		}
		if len(vs) != len(batch) {
			return fmt.Errorf("discovery: embedder %s returned %d vectors for %d cards", r.embedder.Name(), len(vs), len(batch))
		}
		ix.embedded(batch, vs)
	}
	return nil
}
