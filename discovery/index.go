package discovery

import (
	"encoding/json"
	"math"
	"slices"
	"sync"
	"time"
)

// index is a Registry's in-memory view of KV AGENTBUS_AGENTS, kept current
// by a KV watch (watch.go): every registration (instance) by key, grouped
// into agents by name, and the agents' card vectors, normalised, in one
// contiguous matrix that a query scans (search.go). Heartbeats only update
// an instance's live stats in place; the matrix is rebuilt, at the next
// query, only when an agent comes, goes or changes its card. Safe for
// concurrent use.
type index struct {
	embedder string

	mu        sync.RWMutex
	instances map[string]*instance // KV key → instance
	agents    map[string]*agent    // name → agent
	// cache holds vectors this registry embedded itself, by text, so that
	// a card registered with another embedder is embedded once, not per
	// query or per heartbeat.
	cache map[string][]float32
	// maybePending is set when a card is left waiting for its vector, and
	// cleared once none waits: queries skip looking for pending cards.
	maybePending bool
	// gen counts watches: an instance not seen again by a new watch's
	// initial values is gone.
	gen uint64

	// The matrix: rows[i]'s normalised vector is mat[i*dim:(i+1)*dim].
	// odd holds agents whose vector has another length (scored one by
	// one). dirty means rows, mat and odd need rebuilding.
	dirty bool
	rows  []*agent
	mat   []float32
	dim   int
	odd   []*agent
}

// instance is one registration as the index holds it.
type instance struct {
	key string
	gen uint64
	reg Registration // Embedding cleared; vec holds it
	vec []float32
}

// agent is every live registration of one name. Its card (description,
// capabilities, examples, vector) is its newest instance's: during a
// rolling upgrade the new version's card wins.
type agent struct {
	name      string
	instances map[string]*instance
	card      *instance
	// text and embedder identify the vector, so that a heartbeat carrying
	// the same card does not rebuild anything.
	text, embedder string
	// vec is the card's normalised vector, nil while it waits to be
	// embedded with the registry's embedder (pending).
	vec []float32
}

func newIndex(embedder string) *index {
	return &index{embedder: embedder, instances: map[string]*instance{}, agents: map[string]*agent{}, cache: map[string][]float32{}}
}

// begin starts a new watch generation and returns it.
func (ix *index) begin() uint64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.gen++
	return ix.gen
}

// prune drops the instances that the watch of generation gen did not
// deliver among its initial values: they were deleted or expired while no
// watch ran.
func (ix *index) prune(gen uint64) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for key, in := range ix.instances {
		if in.gen < gen {
			ix.remove(key)
		}
	}
}

// apply records one change of KV key: a registration put, or the key
// deleted or expired. A value that is not a registration removes the key
// from the index.
func (ix *index) apply(key string, value []byte, deleted bool, gen uint64) {
	var reg Registration
	ok := !deleted && json.Unmarshal(value, &reg) == nil && reg.Name != ""
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ok {
		ix.remove(key)
		return
	}
	vec := reg.Embedding
	reg.Embedding = nil
	in := ix.instances[key]
	if in != nil && in.reg.Name != reg.Name {
		ix.remove(key) // renamed: leave the old agent first
		in = nil
	}
	if in == nil {
		in = &instance{key: key}
		ix.instances[key] = in
	}
	in.gen, in.reg, in.vec = gen, reg, vec
	a := ix.agents[reg.Name]
	if a == nil {
		a = &agent{name: reg.Name, instances: map[string]*instance{}}
		ix.agents[reg.Name] = a
	}
	a.instances[key] = in
	ix.recard(a)
}

// remove drops key's instance, and its agent with its last instance.
// ix.mu is held.
func (ix *index) remove(key string) {
	in := ix.instances[key]
	if in == nil {
		return
	}
	delete(ix.instances, key)
	a := ix.agents[in.reg.Name]
	if a == nil {
		return
	}
	delete(a.instances, key)
	if len(a.instances) == 0 {
		delete(ix.agents, a.name)
		ix.dirty = true
		return
	}
	if a.card == in {
		ix.recard(a)
	}
}

// recard picks a's card, its newest instance (latest StartedAt, then
// greatest key), and its vector: the stored one when the card was embedded
// with the registry's embedder, else a cached one, else none yet
// (pending). ix.mu is held.
func (ix *index) recard(a *agent) {
	var card *instance
	for _, in := range a.instances {
		if card == nil || in.reg.StartedAt.After(card.reg.StartedAt) ||
			(in.reg.StartedAt.Equal(card.reg.StartedAt) && in.key > card.key) {
			card = in
		}
	}
	a.card = card
	text, embedder := card.reg.EmbeddingText, card.reg.Embedder
	if text == "" {
		text = EmbeddingText(card.reg.Name, card.reg.Capabilities, card.reg.Description, card.reg.Examples)
	}
	if a.vec != nil && a.text == text && a.embedder == embedder {
		return // the same card: a heartbeat
	}
	a.text, a.embedder, a.vec = text, embedder, nil
	switch {
	case embedder == ix.embedder && len(card.vec) > 0:
		a.vec = normalised(card.vec)
	case ix.cache[text] != nil:
		a.vec = ix.cache[text]
	default:
		ix.maybePending = true
	}
	ix.dirty = true
}

// pending returns the distinct card texts that wait to be embedded with
// the registry's embedder, in order.
func (ix *index) pending() []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if !ix.maybePending {
		return nil
	}
	var out []string
	for _, a := range ix.agents {
		if a.vec == nil {
			out = append(out, a.text)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// embedded stores vectors for texts (as pending returned them) in the
// cache and in the agents that wait for them.
func (ix *index) embedded(texts []string, vecs [][]float32) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	// The cache holds the texts of live agents, and a few more for agents
	// that come back; past that, it starts again from what is in use.
	if len(ix.cache) > 2*len(ix.agents)+64 {
		inUse := map[string][]float32{}
		for _, a := range ix.agents {
			if v := ix.cache[a.text]; v != nil {
				inUse[a.text] = v
			}
		}
		ix.cache = inUse
	}
	for i, t := range texts {
		ix.cache[t] = normalised(vecs[i])
	}
	ix.maybePending = false
	for _, a := range ix.agents {
		if a.vec == nil && ix.cache[a.text] != nil {
			a.vec = ix.cache[a.text]
			ix.dirty = true
		}
		if a.vec == nil {
			ix.maybePending = true
		}
	}
}

// rebuild lays the agents' vectors out in the matrix, in name order.
// ix.mu is held for writing.
func (ix *index) rebuild() {
	ix.rows, ix.odd, ix.dim = ix.rows[:0], ix.odd[:0], 0
	names := make([]string, 0, len(ix.agents))
	for n := range ix.agents {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		a := ix.agents[n]
		if a.vec == nil {
			continue // still pending: unranked until embedded
		}
		if ix.dim == 0 {
			ix.dim = len(a.vec)
		}
		if len(a.vec) == ix.dim {
			ix.rows = append(ix.rows, a)
		} else {
			ix.odd = append(ix.odd, a)
		}
	}
	ix.mat = slices.Grow(ix.mat[:0], len(ix.rows)*ix.dim)
	for _, a := range ix.rows {
		ix.mat = append(ix.mat, a.vec...)
	}
	ix.dirty = false
}

// live is one agent's instances at a moment: how many are live (healthy or
// unhealthy), how many healthy, and the steps in flight on the healthy.
type live struct {
	instances, healthy int
	inFlight           int64
}

// liveness counts a's instances at now. ix.mu is held.
func (a *agent) liveness(now time.Time) live {
	var l live
	for _, in := range a.instances {
		switch in.reg.Health(now) {
		case Healthy:
			l.instances++
			l.healthy++
			l.inFlight += max(0, in.reg.InFlight)
		case Unhealthy:
			l.instances++
		}
	}
	return l
}

// match is a's card as a Match (Score and Rank unset). ix.mu is held.
func (a *agent) match(l live) Match {
	r := a.card.reg
	m := Match{Name: a.name, Version: r.Version, Description: r.Description, Capabilities: slices.Clone(r.Capabilities),
		Examples: slices.Clone(r.Examples), Instances: l.instances, Healthy: l.healthy, InFlight: l.inFlight}
	if l.healthy > 0 {
		m.Load = float64(l.inFlight) / float64(l.healthy)
	}
	return m
}

// serves reports whether any instance in the index, whatever its health,
// offers capability.
func (ix *index) serves(capability string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for _, in := range ix.instances {
		if slices.Contains(in.reg.Capabilities, capability) {
			return true
		}
	}
	return false
}

// normalised returns a unit-length copy of v (v itself if it is zero).
func normalised(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return slices.Clone(v)
	}
	inv := float32(1 / math.Sqrt(n))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}
