package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/subjects"
)

// Registry reads and writes KV AGENTBUS_AGENTS.
type Registry struct {
	kv       *bus.KV
	embedder llm.Embedder
	now      func() time.Time
}

// New opens the registry; embedder embeds queries (and registrations made
// with another embedder); nil means llm.LocalEmbedder.
func New(ctx context.Context, b *bus.Bus, embedder llm.Embedder) (*Registry, error) {
	kv, err := b.KV(ctx, subjects.BucketAgents)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	if embedder == nil {
		embedder = llm.LocalEmbedder{}
	}
	return &Registry{kv: kv, embedder: embedder, now: time.Now}, nil
}

// Embedder is the embedder queries are embedded with.
func (r *Registry) Embedder() llm.Embedder { return r.embedder }

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
// offers capability.
func (r *Registry) Serves(ctx context.Context, capability string) (bool, error) {
	list, err := r.List(ctx)
	if err != nil {
		return false, err
	}
	for _, in := range list {
		for _, c := range in.Capabilities {
			if c == capability {
				return true, nil
			}
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
	// Score is the cosine similarity of the query and the agent's embedding.
	Score float64 `json:"score"`
	// Instances counts live (healthy or unhealthy) instances.
	Instances int `json:"instances"`
	Healthy   int `json:"healthy"`
}

// Discover embeds query and returns the top k agents (grouped by name, live
// instances only) by cosine similarity, best first.
func (r *Registry) Discover(ctx context.Context, query string, k int) ([]Match, error) {
	if k <= 0 {
		k = 5
	}
	entries, err := r.kv.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	qv, err := r.embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("discovery: embed query with %s: %w", r.embedder.Name(), err)
	}
	now := r.now()
	byName := map[string]*Match{}
	vectors := map[string][]float32{}
	for _, e := range entries {
		var reg Registration
		if json.Unmarshal(e.Value, &reg) != nil {
			continue
		}
		h := reg.Health(now)
		if h == Unreachable {
			continue
		}
		m, ok := byName[reg.Name]
		if !ok {
			m = &Match{Name: reg.Name, Version: reg.Version, Description: reg.Description, Capabilities: reg.Capabilities, Examples: reg.Examples}
			byName[reg.Name] = m
			vec := reg.Embedding
			if reg.Embedder != r.embedder.Name() || len(vec) == 0 {
				vs, err := r.embedder.Embed(ctx, []string{reg.EmbeddingText})
				if err != nil {
					return nil, fmt.Errorf("discovery: embed %s: %w", reg.Name, err)
				}
				vec = vs[0]
			}
			vectors[reg.Name] = vec
		}
		m.Instances++
		if h == Healthy {
			m.Healthy++
		}
	}
	out := make([]Match, 0, len(byName))
	for name, m := range byName {
		m.Score = llm.Cosine(qv[0], vectors[name])
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Name < out[j].Name
	})
	return out[:min(k, len(out))], nil
}
