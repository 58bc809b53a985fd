package discovery

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/llm"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testIndex is an index whose registrations are embedded with the
// embedder named "test".
func testIndex() *index { return newIndex("test") }

// put applies a registration of agent name (instance key) with vector vec.
func put(t *testing.T, ix *index, key, name string, vec []float32, mod func(*Registration)) {
	t.Helper()
	r := Registration{Instance: key, Name: name, Capabilities: []string{name}, Description: "agent " + name,
		StartedAt: t0, HeartbeatAt: t0, HeartbeatMS: 1000, SelfHealthy: true,
		Embedder: "test", EmbeddingText: "agent " + name, Embedding: vec}
	if mod != nil {
		mod(&r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	ix.apply(key, b, false, 1)
}

func names(ms []Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// unit is the unit vector at angle a in the plane of the first two axes:
// its similarity with unit(0) is cos(a), so scores are set by angles.
func unit(score float64) []float32 {
	return []float32{float32(score), float32(math.Sqrt(1 - score*score)), 0}
}

func TestRankPrefersHealthyAndLessLoadedAmongCloseScores(t *testing.T) {
	q := unit(1)
	cases := []struct {
		name   string
		agents func(t *testing.T, ix *index)
		want   []string
	}{
		{"similarity alone when all are idle and healthy", func(t *testing.T, ix *index) {
			put(t, ix, "a", "a", unit(0.80), nil)
			put(t, ix, "b", "b", unit(0.78), nil)
			put(t, ix, "c", "c", unit(0.30), nil)
		}, []string{"a", "b", "c"}},
		{"close scores: the less loaded first", func(t *testing.T, ix *index) {
			put(t, ix, "a", "a", unit(0.80), func(r *Registration) { r.InFlight = 3 }) // rank 0.80 − 0.05×0.75
			put(t, ix, "b", "b", unit(0.78), nil)
		}, []string{"b", "a"}},
		{"load counts per healthy instance", func(t *testing.T, ix *index) {
			// a: 4 in flight over 4 healthy instances (load 1, rank 0.775);
			// b: 2 on its only one (load 2, rank 0.76…).
			for i := range 4 {
				put(t, ix, fmt.Sprintf("a%d", i), "a", unit(0.80), func(r *Registration) { r.InFlight = 1 })
			}
			put(t, ix, "b", "b", unit(0.80), func(r *Registration) { r.InFlight = 2 })
		}, []string{"a", "b"}},
		{"a busy agent far ahead keeps its place", func(t *testing.T, ix *index) {
			put(t, ix, "a", "a", unit(0.80), func(r *Registration) { r.InFlight = 50 })
			put(t, ix, "b", "b", unit(0.70), nil)
		}, []string{"a", "b"}},
		{"close scores: an unhealthy-only agent below a healthy one", func(t *testing.T, ix *index) {
			put(t, ix, "a", "a", unit(0.80), func(r *Registration) { r.SelfHealthy = false })
			put(t, ix, "b", "b", unit(0.76), func(r *Registration) { r.InFlight = 9 })
		}, []string{"b", "a"}},
		{"an unhealthy-only agent more than twice the margin ahead keeps its place", func(t *testing.T, ix *index) {
			put(t, ix, "a", "a", unit(0.80), func(r *Registration) { r.SelfHealthy = false })
			put(t, ix, "b", "b", unit(0.69), nil)
		}, []string{"a", "b"}},
		{"one healthy instance is enough", func(t *testing.T, ix *index) {
			put(t, ix, "a1", "a", unit(0.80), func(r *Registration) { r.SelfHealthy = false })
			put(t, ix, "a2", "a", unit(0.80), nil)
			put(t, ix, "b", "b", unit(0.79), nil)
		}, []string{"a", "b"}},
		{"unreachable instances count for nothing", func(t *testing.T, ix *index) {
			put(t, ix, "a", "a", unit(0.99), func(r *Registration) { r.HeartbeatAt = t0.Add(-time.Hour) })
			put(t, ix, "b1", "b", unit(0.80), func(r *Registration) { r.InFlight = 100 })
			put(t, ix, "b2", "b", unit(0.80), func(r *Registration) { r.HeartbeatAt = t0.Add(-time.Hour) })
			put(t, ix, "c", "c", unit(0.79), nil)
		}, []string{"c", "b"}},
		{"ties break by name", func(t *testing.T, ix *index) {
			put(t, ix, "z", "z", unit(0.5), nil)
			put(t, ix, "m", "m", unit(0.5), nil)
			put(t, ix, "n", "n", unit(0.5), nil)
		}, []string{"m", "n", "z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ix := testIndex()
			c.agents(t, ix)
			got := ix.top(q, 5, t0, DefaultMargin)
			if !slices.Equal(names(got), c.want) {
				t.Fatalf("ranked %v, want %v: %+v", names(got), c.want, got)
			}
			for _, m := range got {
				if m.Rank > m.Score+1e-9 || m.Score-m.Rank > 2*DefaultMargin+1e-9 {
					t.Errorf("%s: rank %g outside [score−2×margin, score] for score %g", m.Name, m.Rank, m.Score)
				}
			}
			// With the preference off, similarity alone orders them.
			plain := ix.top(q, 5, t0, 0)
			if !slices.IsSortedFunc(plain, func(a, b Match) int { return -cmp.Compare(a.Score, b.Score) }) {
				t.Errorf("with margin 0, not sorted by score: %+v", plain)
			}
		})
	}
}

func TestMatchReportsLiveCounts(t *testing.T) {
	ix := testIndex()
	put(t, ix, "a1", "a", unit(0.8), func(r *Registration) { r.InFlight = 2 })
	put(t, ix, "a2", "a", unit(0.8), func(r *Registration) { r.InFlight = 1 })
	put(t, ix, "a3", "a", unit(0.8), func(r *Registration) { r.SelfHealthy, r.InFlight = false, 7 })
	put(t, ix, "a4", "a", unit(0.8), func(r *Registration) { r.HeartbeatAt = t0.Add(-time.Hour) })
	got := ix.top(unit(1), 5, t0, DefaultMargin)
	if len(got) != 1 {
		t.Fatalf("got %+v", got)
	}
	m := got[0]
	if m.Instances != 3 || m.Healthy != 2 || m.InFlight != 3 || m.Load != 1.5 {
		t.Fatalf("match %+v: want 3 live instances, 2 healthy, 3 in flight on them, load 1.5", m)
	}
}

// TestTopKMatchesBruteForce: the matrix and heap return exactly what
// scoring every agent and sorting them does, for random vectors, random
// health and load, and any k.
func TestTopKMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const dim, agents = 32, 300
	randVec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	ix := testIndex()
	type truth struct {
		name string
		vec  []float32
		l    live
	}
	var all []truth
	for i := range agents {
		name := fmt.Sprintf("agent-%03d", i)
		vec := randVec()
		n := 1 + rng.IntN(3)
		var l live
		for j := range n {
			inFlight := int64(rng.IntN(4))
			healthy := rng.IntN(4) > 0
			gone := rng.IntN(6) == 0
			put(t, ix, fmt.Sprintf("%s-%d", name, j), name, vec, func(r *Registration) {
				r.InFlight, r.SelfHealthy = inFlight, healthy
				if gone {
					r.HeartbeatAt = t0.Add(-time.Minute)
				}
			})
			switch {
			case gone:
			case healthy:
				l.instances, l.healthy, l.inFlight = l.instances+1, l.healthy+1, l.inFlight+inFlight
			default:
				l.instances++
			}
		}
		all = append(all, truth{name, vec, l})
	}
	for trial := range 20 {
		q := randVec()
		for _, margin := range []float64{0, DefaultMargin, 0.3} {
			type ranked struct {
				name        string
				score, rank float64
			}
			var want []ranked
			for _, a := range all {
				if a.l.instances == 0 {
					continue
				}
				s := llm.Cosine(q, a.vec)
				want = append(want, ranked{a.name, s, s - margin*pressure(a.l)})
			}
			slices.SortFunc(want, func(x, y ranked) int {
				if c := cmp.Compare(y.rank, x.rank); c != 0 {
					return c
				}
				return strings.Compare(x.name, y.name)
			})
			for _, k := range []int{1, 5, 17, agents} {
				got := ix.top(normalised(q), k, t0, margin)
				if len(got) != min(k, len(want)) {
					t.Fatalf("trial %d, k=%d: %d matches, want %d", trial, k, len(got), min(k, len(want)))
				}
				for i, m := range got {
					w := want[i]
					if m.Name != w.name || math.Abs(m.Score-w.score) > 1e-5 || math.Abs(m.Rank-w.rank) > 1e-5 {
						t.Fatalf("trial %d, margin %g, k=%d: match %d is %s (score %g, rank %g), want %s (score %g, rank %g)",
							trial, margin, k, i, m.Name, m.Score, m.Rank, w.name, w.score, w.rank)
					}
				}
			}
		}
	}
}

func TestIndexCardsAndRemoval(t *testing.T) {
	ix := testIndex()
	put(t, ix, "old", "a", unit(0.9), func(r *Registration) { r.Version, r.StartedAt = "1.0.0", t0.Add(-time.Hour) })
	put(t, ix, "new", "a", unit(0.2), func(r *Registration) {
		r.Version, r.EmbeddingText, r.Description = "2.0.0", "agent a v2", "agent a, version 2"
	})
	got := ix.top(unit(1), 5, t0, 0)
	if len(got) != 1 || got[0].Version != "2.0.0" || math.Abs(got[0].Score-0.2) > 1e-6 || got[0].Instances != 2 {
		t.Fatalf("the newest instance's card should win: %+v", got)
	}
	// A heartbeat of the same card rebuilds nothing.
	ix.top(unit(1), 5, t0, 0)
	put(t, ix, "new", "a", unit(0.2), func(r *Registration) {
		r.Version, r.EmbeddingText, r.Description, r.InFlight = "2.0.0", "agent a v2", "agent a, version 2", 4
	})
	if ix.dirty {
		t.Error("a heartbeat of an unchanged card marked the matrix for rebuilding")
	}
	// The newest goes: the old card is back.
	ix.apply("new", nil, true, 1)
	if got := ix.top(unit(1), 5, t0, 0); len(got) != 1 || got[0].Version != "1.0.0" || math.Abs(got[0].Score-0.9) > 1e-6 {
		t.Fatalf("after the newest instance left: %+v", got)
	}
	// A value that is not a registration removes its key.
	ix.apply("old", []byte("garbage"), false, 1)
	if got := ix.top(unit(1), 5, t0, 0); len(got) != 0 || len(ix.agents) != 0 || len(ix.instances) != 0 {
		t.Fatalf("after garbage replaced the last instance: %+v, %d agents", got, len(ix.agents))
	}
	// Instances a new watch did not deliver are pruned.
	put(t, ix, "x", "x", unit(0.5), nil)
	ix.begin()
	gen := ix.begin() // 2: put applies with generation 1
	put(t, ix, "y", "y", unit(0.5), nil)
	ix.apply("z", mustJSON(t, Registration{Instance: "z", Name: "z", StartedAt: t0, HeartbeatAt: t0, SelfHealthy: true,
		Embedder: "test", Embedding: unit(0.5)}), false, gen)
	ix.prune(gen)
	if got := names(ix.catalog(t0)); !slices.Equal(got, []string{"z"}) {
		t.Fatalf("after prune: %v, want only z", got)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzIndexApply: whatever the bucket holds, applying it never panics,
// and the index stays consistent: every instance is in its agent, every
// agent has instances and a card, and a query returns at most k live
// agents.
func FuzzIndexApply(f *testing.F) {
	good := mustJSON(f, Registration{Name: "a", Capabilities: []string{"x"}, HeartbeatAt: t0, SelfHealthy: true, Embedder: "test", Embedding: []float32{1, 0, 0}})
	other := mustJSON(f, Registration{Name: "b", HeartbeatAt: t0, Embedder: "test", Embedding: []float32{0, 1}})
	f.Add([]byte("k1"), good, false, []byte("k2"), other, false)
	f.Add([]byte("k1"), good, false, []byte("k1"), other, false)
	f.Add([]byte("k1"), good, false, []byte("k1"), []byte("{}"), true)
	f.Add([]byte("k"), []byte(`{"name":"n","embedding":[]}`), false, []byte("k"), []byte(`{"name":"n","embedder":"test","embedding":[0,0]}`), false)
	f.Fuzz(func(t *testing.T, k1, v1 []byte, d1 bool, k2, v2 []byte, d2 bool) {
		ix := testIndex()
		ix.apply(string(k1), v1, d1, 1)
		ix.apply(string(k2), v2, d2, 1)
		ix.embedded(ix.pending(), func() [][]float32 {
			var vs [][]float32
			for range ix.pending() {
				vs = append(vs, []float32{0, 0, 1})
			}
			return vs
		}())
		if got := ix.top([]float32{1, 0, 0}, 1, t0, DefaultMargin); len(got) > 1 {
			t.Fatalf("k=1 returned %d matches", len(got))
		}
		ix.catalog(t0)
		n := 0
		for name, a := range ix.agents {
			if len(a.instances) == 0 || a.card == nil || a.name != name {
				t.Fatalf("agent %q: %d instances, card %v", name, len(a.instances), a.card)
			}
			for key, in := range a.instances {
				if ix.instances[key] != in || in.reg.Name != name {
					t.Fatalf("instance %q of %q not indexed as such", key, name)
				}
			}
			n += len(a.instances)
		}
		if n != len(ix.instances) {
			t.Fatalf("%d instances in agents, %d indexed", n, len(ix.instances))
		}
	})
}
