package discovery

import (
	"cmp"
	"slices"
	"time"

	"github.com/viterin/vek/vek32"

	"github.com/agentbus/agentbus/llm/vector"
)

// How matches rank. Similarity picks the agents that fit a query; among
// agents that fit about equally well, routing prefers the ones that can
// take the step now. Each live agent gets
//
//	Rank = Score − Margin × pressure
//
// where pressure is load/(load+1) ∈ [0, 1) for an agent with a healthy
// instance, load being the steps in flight per healthy instance (0 when
// idle, ½ with one step each, ¾ with three), and 2 for an agent whose live
// instances are all unhealthy. Two scores are close when they differ by
// less than Margin. So:
//
//   - among close agents, one with a healthy instance ranks above one with
//     none (the difference it overcomes is below Margin×(2−pressure),
//     never less than Margin);
//   - among close healthy agents, the less loaded ranks first, by up to
//     Margin;
//   - an agent more than 2×Margin ahead keeps its place whatever its
//     health or load: a busy or failing agent that fits is still a better
//     route than an idle one that does not, and planners still see it.
//
// Unreachable instances (no heartbeat for two intervals) count for
// nothing, and an agent with no live instance is never returned. Ties
// break by name, so one query over one registry always ranks the same.
//
// Matches are chosen exactly: every agent's score is one dot product with
// the query over the contiguous matrix of normalised card vectors, and a
// heap of size k keeps the best ranks. At hundreds of agents this takes
// tens of microseconds (bench_test.go), less than an approximate graph
// (HNSW) search, which also could not judge health and load while it
// walks.
func pressure(l live) float64 {
	if l.healthy == 0 {
		return 2
	}
	load := float64(l.inFlight) / float64(l.healthy)
	return load / (load + 1)
}

// scored is one candidate in the top-k heap.
type scored struct {
	a     *agent
	score float64
	rank  float64
	l     live
}

// worse orders candidates: lower rank, then greater name, is worse.
func worse(x, y scored) bool {
	if x.rank != y.rank {
		return x.rank < y.rank
	}
	return x.a.name > y.a.name
}

// topK keeps the k best candidates in a min-heap (the worst at h[0]).
type topK struct {
	k int
	h []scored
}

// full reports whether the heap holds k candidates; then a candidate must
// beat h[0] to enter.
func (t *topK) full() bool { return len(t.h) == t.k }

func (t *topK) push(c scored) {
	if !t.full() {
		t.h = append(t.h, c)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(t.h[i], t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	if !worse(t.h[0], c) {
		return
	}
	t.h[0] = c
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t.h) && worse(t.h[l], t.h[m]) {
			m = l
		}
		if r < len(t.h) && worse(t.h[r], t.h[m]) {
			m = r
		}
		if m == i {
			break
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// sorted returns the candidates best first.
func (t *topK) sorted() []scored {
	out := slices.Clone(t.h)
	slices.SortFunc(out, func(x, y scored) int {
		if worse(x, y) {
			return 1
		}
		if worse(y, x) {
			return -1
		}
		return 0
	})
	return out
}

// top returns the k live agents of best rank for the normalised query
// vector q at time now, best first.
func (ix *index) top(q []float32, k int, now time.Time, margin float64) []Match {
	ix.mu.RLock()
	if ix.dirty {
		ix.mu.RUnlock()
		ix.mu.Lock()
		if ix.dirty {
			ix.rebuild()
		}
		ix.mu.Unlock()
		ix.mu.RLock()
	}
	defer ix.mu.RUnlock()
	t := topK{k: k, h: make([]scored, 0, k)}
	consider := func(a *agent, score float64) {
		// Rank never exceeds Score: an agent whose score cannot beat the
		// worst kept rank is skipped before its instances are looked at.
		if t.full() && score < t.h[0].rank {
			return
		}
		l := a.liveness(now)
		if l.instances == 0 {
			return
		}
		t.push(scored{a: a, score: score, rank: score - margin*pressure(l), l: l})
	}
	if len(q) == ix.dim {
		for i, a := range ix.rows {
			consider(a, float64(vek32.Dot(q, ix.mat[i*ix.dim:(i+1)*ix.dim])))
		}
	} else {
		for _, a := range ix.rows {
			consider(a, vector.Cosine(q, a.vec))
		}
	}
	for _, a := range ix.odd {
		consider(a, vector.Cosine(q, a.vec))
	}
	out := make([]Match, 0, len(t.h))
	for _, c := range t.sorted() {
		m := c.a.match(c.l)
		m.Score, m.Rank = c.score, c.rank
		out = append(out, m)
	}
	return out
}

// catalog returns every live agent with its card and live counts, by
// name; Score and Rank are zero.
func (ix *index) catalog(now time.Time) []Match {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]Match, 0, len(ix.agents))
	for _, a := range ix.agents {
		if l := a.liveness(now); l.instances > 0 {
			out = append(out, a.match(l))
		}
	}
	slices.SortFunc(out, func(x, y Match) int { return cmp.Compare(x.Name, y.Name) })
	return out
}
