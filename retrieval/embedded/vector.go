package embedded

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/coder/hnsw"
)

func (t *tenant) newGraph() *hnsw.Graph[string] {
	g := hnsw.NewGraph[string]()
	g.M = t.cfg.M
	g.EfSearch = t.cfg.EfSearch
	g.Distance = hnsw.CosineDistance
	return g
}

// loadGraph imports vectors.hnsw if it holds exactly the stored vectors,
// and otherwise rebuilds the graph from the records.
func (t *tenant) loadGraph() error {
	b, err := os.ReadFile(filepath.Join(t.dir, graphName))
	if errors.Is(err, fs.ErrNotExist) {
		t.rebuildGraph()
		return nil
	}
	if err != nil {
		return err
	}
	g := t.newGraph()
	if err := g.Import(bytes.NewReader(b)); err == nil && g.Len() == t.vectorCount() {
		g.M, g.EfSearch = t.cfg.M, t.cfg.EfSearch
		t.graph, t.graphOnDisk = g, true
		return nil
	}
	t.rebuildGraph()
	return nil
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

// rebuildGraph makes a new graph of every record with a non-zero vector
// (a zero vector has no direction, so no cosine neighbours).
func (t *tenant) rebuildGraph() {
	t.graph = t.newGraph()
	ids := make([]string, 0, len(t.recs))
	for id, r := range t.recs {
		if !zero(r.Vector) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		t.graph.Add(hnsw.MakeNode(id, t.recs[id].Vector))
	}
}

// upsertVector puts the (already stored) record's vector in the graph.
// coder/hnsw's Add panics on an existing key, so the old node is deleted
// first; a Delete that empties the top layer leaves a graph whose Search
// would dereference a nil entry point, so the graph is then rebuilt.
func (t *tenant) upsertVector(id string, v []float32) {
	if _, ok := t.graph.Lookup(id); ok {
		t.graph.Delete(id)
		topo := (&hnsw.Analyzer[string]{Graph: t.graph}).Topography()
		if len(topo) > 0 && topo[len(topo)-1] == 0 {
			t.rebuildGraph() // includes the new vector
			return
		}
	}
	if !zero(v) {
		t.graph.Add(hnsw.MakeNode(id, v))
	}
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
// Without filters it asks the graph for K; with filters it compares qv
// exactly with every passing chunk when they are few, and otherwise asks
// the graph for ever more neighbours until K of them pass.
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
	if !q.Filters.IsZero() {
		passing := 0
		for _, r := range t.recs {
			if !zero(r.Vector) && keep(r) {
				passing++
			}
		}
		if passing <= t.cfg.BruteForceMax || passing*5 <= n {
			return t.exact(qv, k, keep), nil
		}
	} else if k >= n {
		// Everything is asked for: compare exactly rather than trust that
		// a graph walk reaches every node.
		return t.exact(qv, k, keep), nil
	}
	for fetch := k; ; fetch *= 4 {
		var hits []retrieval.Hit
		for _, node := range t.graph.Search(qv, min(fetch, n)) {
			if r, ok := t.recs[node.Key]; ok && keep(r) {
				hits = append(hits, r.hit(llm.Cosine(qv, r.Vector)))
			}
		}
		if len(hits) >= k {
			return best(hits, k), nil
		}
		if fetch >= n {
			// The walk did not reach K passing chunks: be exact.
			return t.exact(qv, k, keep), nil
		}
	}
}

// exact scores qv against every record with a vector that keep accepts.
func (t *tenant) exact(qv []float32, k int, keep func(record) bool) []retrieval.Hit {
	var hits []retrieval.Hit
	for _, r := range t.recs {
		if !zero(r.Vector) && keep(r) {
			hits = append(hits, r.hit(llm.Cosine(qv, r.Vector)))
		}
	}
	return best(hits, k)
}

// best sorts by similarity (ties by ID) and keeps k.
func best(hits []retrieval.Hit, k int) []retrieval.Hit {
	slices.SortFunc(hits, func(a, b retrieval.Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.ID, b.ID))
	})
	return hits[:min(len(hits), k)]
}
