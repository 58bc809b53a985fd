package search

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agentbus/agentbus/querykind"
	"github.com/agentbus/agentbus/retrieval"
)

// ListRun is how one ranked list went.
type ListRun struct {
	Name    string `json:"name"`
	Profile string `json:"profile"`
	Query   string `json:"query"`
	Hits    int    `json:"hits"`
	TookMS  int64  `json:"took_ms"`
	Error   string `json:"error,omitempty"`
	err     error
}

// result is what a search found: the hits, each side's best, and how
// they were reranked (nil when reranking is off).
type result struct {
	hits   []retrieval.Hit
	sides  []Side
	rerank *retrieval.Reranked
}

// run fetches every list in parallel, fuses the lists that answered with
// weighted RRF, reranks the fusion and keeps the best k with at most
// perDoc hits of one document (perDoc < 0: no cap); each list asks for 3k
// hits when capped, so that the cap still leaves k. A comparison's sides
// are fused apart as well, and each side's best SideHits are kept among
// the k. It fails with retrieval.ErrAllProfilesFailed only when every list
// failed. One list is still returned in fused form, like
// retrieval.Ensemble does.
func (a *Agent) run(ctx context.Context, tenant string, p plan, lists []list, perDoc int) (res result, runs []ListRun, err error) {
	k := p.k
	ctx, span := startSpan(ctx, "search ensemble", attribute.Int("agentbus.search.lists", len(lists)), attribute.Int("agentbus.search.k", k))
	defer func() { span.SetAttributes(attribute.Int("agentbus.search.hits", len(res.hits))); endSpan(span, err) }()
	fetch := k
	if perDoc > 0 {
		fetch = 3 * k
	}
	f := p.filters.retrieval()
	runs = make([]ListRun, len(lists))
	got := make([][]retrieval.Hit, len(lists))
	var wg sync.WaitGroup
	for i, l := range lists {
		wg.Go(func() {
			start := time.Now()
			lctx, ls := startSpan(ctx, "search profile "+l.profile, attribute.String("agentbus.search.profile", l.profile),
				attribute.String("agentbus.search.list", l.name))
			hits, err := a.cfg.Backend.Search(lctx, tenant, l.profile, retrieval.Query{Text: l.query, K: fetch, Filters: f})
			ls.SetAttributes(attribute.Int("agentbus.search.hits", len(hits)))
			endSpan(ls, err)
			runs[i] = ListRun{Name: l.name, Profile: l.profile, Query: l.query, Hits: len(hits),
				TookMS: time.Since(start).Milliseconds(), err: err}
			if err != nil {
				runs[i].Error = err.Error()
				return
			}
			got[i] = hits
		})
	}
	wg.Wait()
	byName := make(map[string][]retrieval.Hit, len(lists))
	bySide := map[int]map[string][]retrieval.Hit{}
	var failed []string
	for i, r := range runs {
		if r.err != nil {
			failed = append(failed, r.Name+": "+r.Error)
			continue
		}
		byName[r.Name] = got[i]
		if s := lists[i].side; s > 0 {
			if bySide[s] == nil {
				bySide[s] = map[string][]retrieval.Hit{}
			}
			bySide[s][r.Name] = got[i]
		}
	}
	if len(byName) == 0 {
		return result{}, runs, fmt.Errorf("%w: %s", retrieval.ErrAllProfilesFailed, strings.Join(failed, "; "))
	}
	_, fs := startSpan(ctx, "search fusion", attribute.String("agentbus.search.fusion", "rrf"), attribute.Int("agentbus.search.rrf_k", retrieval.RRFK))
	fused := retrieval.FuseWeighted(retrieval.RRFK, byName, a.cfg.Weights.Of)
	fs.SetAttributes(attribute.Int("agentbus.search.hits", len(fused)))
	fs.End()
	if a.cfg.Reranker != nil {
		rctx, rs := startSpan(ctx, "search rerank", attribute.String("agentbus.search.reranker", a.cfg.Reranker.Name()))
		rr, err := a.cfg.Reranker.Rerank(rctx, retrieval.RerankQuery{Text: p.u.Search, Identifiers: p.u.Identifiers}, fused)
		if err == nil {
			err = retrieval.CheckRerank(fused, rr.Hits)
		}
		endSpan(rs, err)
		if err != nil {
			if ctx.Err() != nil {
				return result{}, runs, ctx.Err()
			}
			// A reranker that fails outright (the LLM one falls back on
			// its own) leaves the fused order, and the output says so.
			rr = retrieval.Reranked{Hits: fused, By: retrieval.RerankNone, Fallback: err.Error()}
		}
		fused = rr.Hits
		res.rerank = &rr
		res.rerank.Hits = nil
	}
	res.hits = diverse(fused, k, perDoc)
	var best []retrieval.Hit
	res.sides, best = a.sides(ctx, p, bySide)
	res.hits = keepSides(res.hits, best, k)
	return res, runs, nil
}

// sides fuses each side's lists apart, reranks them deterministically
// for the side's own text, and names the side's best SideHits; it also
// returns those hits, sides in order.
func (a *Agent) sides(ctx context.Context, p plan, bySide map[int]map[string][]retrieval.Hit) ([]Side, []retrieval.Hit) {
	if len(p.u.Sides) == 0 {
		return nil, nil
	}
	out := make([]Side, 0, len(p.u.Sides))
	var best []retrieval.Hit
	for i, name := range p.u.Sides {
		side := Side{Name: name, Hits: []string{}}
		if lists := bySide[i+1]; len(lists) > 0 {
			hits := retrieval.FuseWeighted(retrieval.RRFK, lists, a.cfg.Weights.Of)
			q := retrieval.RerankQuery{Text: name, Identifiers: querykind.Understand(name).Identifiers}
			if rr, err := (retrieval.Deterministic{}).Rerank(ctx, q, hits); err == nil {
				hits = rr.Hits
			}
			for _, h := range hits[:min(len(hits), a.cfg.SideHits)] {
				side.Hits = append(side.Hits, h.ID)
				best = append(best, h)
			}
		}
		out = append(out, side)
	}
	return out, best
}

// keepSides makes sure every side's best hits are among the k hits (more
// when the sides need more than k): a missing one takes the place of the
// last hit that no side needs.
func keepSides(hits, best []retrieval.Hit, k int) []retrieval.Hit {
	need := map[string]bool{}
	for _, h := range best {
		need[h.ID] = true
	}
	if len(need) == 0 {
		return hits
	}
	have := map[string]bool{}
	for _, h := range hits {
		have[h.ID] = true
	}
	out := slices.Clone(hits)
	for _, h := range best {
		if have[h.ID] {
			continue
		}
		have[h.ID] = true
		// Replace the last hit no side needs, if the k are taken.
		if len(out) >= k {
			for j := len(out) - 1; j >= 0; j-- {
				if !need[out[j].ID] {
					out = slices.Delete(out, j, j+1)
					break
				}
			}
		}
		out = append(out, h)
	}
	return out
}

// diverse keeps, in order, the first k hits with at most perDoc of any one
// document (perDoc < 0: the first k).
func diverse(hits []retrieval.Hit, k, perDoc int) []retrieval.Hit {
	if perDoc < 0 {
		return hits[:min(len(hits), k)]
	}
	out := make([]retrieval.Hit, 0, min(len(hits), k))
	seen := map[string]int{}
	for _, h := range hits {
		if len(out) == k {
			break
		}
		if seen[h.DocID] < perDoc {
			seen[h.DocID]++
			out = append(out, h)
		}
	}
	return out
}

// summarize says which profiles contributed (at least one list answered)
// and which lists failed, in plan order.
func summarize(profiles []string, runs []ListRun) (used []string, failed []Failure) {
	used, failed = []string{}, []Failure{}
	for _, p := range profiles {
		ok := slices.ContainsFunc(runs, func(r ListRun) bool { return r.Profile == p && r.err == nil })
		if ok {
			used = append(used, p)
		}
		for _, r := range runs {
			if r.Profile == p && r.err != nil {
				f := Failure{Profile: p, Error: r.Error}
				if r.Name != p {
					f.List = r.Name
				}
				failed = append(failed, f)
			}
		}
	}
	return used, failed
}

// allUnknown reports whether every list failed because its profile does
// not exist: a retry cannot help.
func allUnknown(runs []ListRun) bool {
	for _, r := range runs {
		if !errors.Is(r.err, retrieval.ErrUnknownProfile) {
			return false
		}
	}
	return len(runs) > 0
}
