package embedded

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/coder/hnsw"

	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/retrieval"
)

// The vector graph never deletes. coder/hnsw v0.6.1's Delete leaves
// one-way edges pointing at removed nodes (replenish adds edges in one
// direction only), so later walks reach them, and Add then panics on a
// nil entry point. Instead a replaced record gets a new node under a new
// key and the old node is dead: skipped by searches (a node is live only
// while its record's VecKey is its key) and dropped when the graph is
// rebuilt, which happens once dead nodes outnumber a quarter of it.

func (t *tenant) newGraph() *hnsw.Graph[string] {
	g := hnsw.NewGraph[string]()
	g.M = t.cfg.M
	g.EfSearch = t.cfg.EfSearch
	g.Distance = hnsw.CosineDistance
	// Levels from a fixed seed: the same chunks indexed in the same order
	// make the same graph and answer the same, run after run (hnsw's
	// default draws from a time-seeded source).
	g.Rng = rand.New(rand.NewSource(1))
	return g
}

// loadGraph imports vectors.hnsw if it holds every record's node, and
// otherwise rebuilds the graph. It reports whether records got new keys.
func (t *tenant) loadGraph() bool {
	if b, err := os.ReadFile(filepath.Join(t.dir, graphName)); err == nil {
		g := t.newGraph()
		if g.Import(bytes.NewReader(b)) == nil && t.covers(g) {
			g.M, g.EfSearch = t.cfg.M, t.cfg.EfSearch
			t.graph, t.graphOnDisk = g, true
			t.dead = g.Len() - t.vectorCount()
			return false
		}
	}
	return t.rebuildGraph()
}

// covers reports whether g has the node of every record with a vector.
func (t *tenant) covers(g *hnsw.Graph[string]) bool {
	for _, r := range t.recs {
		if zero(r.Vector) {
			continue
		}
		if _, ok := g.Lookup(r.VecKey); r.VecKey == "" || !ok {
			return false
		}
	}
	return true
}

func (t *tenant) saveGraph() error {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := t.graph.Export(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(t.dir, graphName), buf.Bytes()); err != nil {
		return err
	}
	t.graphOnDisk = true
	return nil
}

func (t *tenant) vectorCount() int {
	n := 0
	for _, r := range t.recs {
		if !zero(r.Vector) {
			n++
		}
	}
	return n
}

// rebuildGraph makes a new graph of the live records' vectors (a zero
// vector has no direction, so no cosine neighbours), keeping their keys
// and giving one to a record without. It reports whether it gave any.
func (t *tenant) rebuildGraph() bool {
	t.graph, t.dead = t.newGraph(), 0
	ids := make([]string, 0, len(t.recs))
	for id, r := range t.recs {
		if !zero(r.Vector) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	changed := false
	for _, id := range ids {
		r := t.recs[id]
		if r.VecKey == "" {
			r.VecKey, changed = t.newKey(id), true
			t.recs[id] = r
		}
		t.graph.Add(hnsw.MakeNode(r.VecKey, r.Vector))
	}
	return changed
}

func (t *tenant) newKey(id string) string {
	t.nextGen++
	return id + "\x00" + strconv.FormatUint(t.nextGen, 36)
}

// putVector gives r a new graph node; the node of the record it replaces,
// if any, becomes dead.
func (t *tenant) putVector(r *record) {
	if old, ok := t.recs[r.ID]; ok && old.VecKey != "" {
		t.dead++
	}
	r.VecKey = ""
	if !zero(r.Vector) {
		r.VecKey = t.newKey(r.ID)
		t.graph.Add(hnsw.MakeNode(r.VecKey, r.Vector))
	}
}

// live returns the record whose current node key is.
func (t *tenant) live(key string) (record, bool) {
	id, _, _ := strings.Cut(key, "\x00")
	r, ok := t.recs[id]
	return r, ok && r.VecKey == key
}

func zero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// searchVector returns the chunks nearest to qv that pass the filters.
// With filters passing few chunks it compares qv with each exactly;
// otherwise it walks the graph for at least EfSearch neighbours (the walk
// stops early when asked for fewer), and for ever more until K live,
// passing ones are found, falling back to exact comparison.
func (t *tenant) searchVector(qv []float32, q retrieval.Query) ([]retrieval.Hit, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return nil, ErrClosed
	}
	n := t.graph.Len()
	if zero(qv) || n == 0 {
		return nil, nil
	}
	if len(qv) != t.dim {
		return nil, fmt.Errorf("embedded: query vector has dimension %d, the index has %d", len(qv), t.dim)
	}
	k := q.Limit()
	keep := func(r record) bool { return q.Filters.Match(r.Date, r.meta) }
	liveN := n - t.dead
	if !q.Filters.IsZero() {
		passing := 0
		for _, r := range t.recs {
			if !zero(r.Vector) && keep(r) {
				passing++
			}
		}
		if passing <= t.cfg.BruteForceMax || passing*5 <= liveN {
			return t.exact(qv, k, keep), nil
		}
	} else if k >= liveN || liveN <= t.cfg.ExactMax {
		// Few vectors, or all asked for: compare exactly rather than trust
		// that a walk reaches the nearest.
		return t.exact(qv, k, keep), nil
	}
	for fetch := max(4*k, t.cfg.EfSearch); ; fetch *= 4 {
		var hits []retrieval.Hit
		for _, node := range t.graph.Search(qv, min(fetch, n)) {
			if r, ok := t.live(node.Key); ok && keep(r) {
				hits = append(hits, r.hit(llm.Cosine(qv, r.Vector)))
			}
		}
		if len(hits) >= k {
			return best(hits, k), nil
		}
		if fetch >= n {
			return t.exact(qv, k, keep), nil
		}
	}
}

// exact scores qv against every record with a vector that keep accepts,
// building hits only for the best k.
func (t *tenant) exact(qv []float32, k int, keep func(record) bool) []retrieval.Hit {
	type scored struct {
		score float64
		id    string
	}
	top := make([]scored, 0, k+1)
	worse := func(a, b scored) bool { return a.score < b.score || (a.score == b.score && a.id > b.id) }
	for id, r := range t.recs {
		if r.VecKey == "" || !keep(r) { // no key: a zero vector
			continue
		}
		c := scored{llm.Cosine(qv, r.Vector), id}
		if len(top) == k && !worse(top[k-1], c) {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, c, func(e, c scored) int {
			if worse(c, e) {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, i, c)
		if len(top) > k {
			top = top[:k]
		}
	}
	hits := make([]retrieval.Hit, len(top))
	for i, c := range top {
		hits[i] = t.recs[c.id].hit(c.score)
	}
	return hits
}

// best sorts by similarity (ties by ID) and keeps k.
func best(hits []retrieval.Hit, k int) []retrieval.Hit {
	slices.SortFunc(hits, func(a, b retrieval.Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.ID, b.ID))
	})
	return hits[:min(len(hits), k)]
}
