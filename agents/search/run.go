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

// run fetches every list in parallel and fuses the lists that answered
// with RRF, keeping the best k with at most perDoc hits of one document
// (perDoc < 0: no cap); each list asks for 3k hits when capped, so that
// the cap still leaves k. It fails with retrieval.ErrAllProfilesFailed
// only when every list failed. One list is still returned in fused form,
// like retrieval.Ensemble does.
func run(ctx context.Context, b retrieval.Backend, tenant string, lists []list, k, perDoc int, f retrieval.Filters) (hits []retrieval.Hit, runs []ListRun, err error) {
	ctx, span := startSpan(ctx, "search ensemble", attribute.Int("agentbus.search.lists", len(lists)), attribute.Int("agentbus.search.k", k))
	defer func() { span.SetAttributes(attribute.Int("agentbus.search.hits", len(hits))); endSpan(span, err) }()
	fetch := k
	if perDoc > 0 {
		fetch = 3 * k
	}
	runs = make([]ListRun, len(lists))
	got := make([][]retrieval.Hit, len(lists))
	var wg sync.WaitGroup
	for i, l := range lists {
		wg.Go(func() {
			start := time.Now()
			lctx, ls := startSpan(ctx, "search profile "+l.profile, attribute.String("agentbus.search.profile", l.profile),
				attribute.String("agentbus.search.list", l.name))
			hits, err := b.Search(lctx, tenant, l.profile, retrieval.Query{Text: l.query, K: fetch, Filters: f})
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
	var failed []string
	for i, r := range runs {
		if r.err != nil {
			failed = append(failed, r.Name+": "+r.Error)
			continue
		}
		byName[r.Name] = got[i]
	}
	if len(byName) == 0 {
		return nil, runs, fmt.Errorf("%w: %s", retrieval.ErrAllProfilesFailed, strings.Join(failed, "; "))
	}
	_, fs := startSpan(ctx, "search fusion", attribute.String("agentbus.search.fusion", "rrf"), attribute.Int("agentbus.search.rrf_k", retrieval.RRFK))
	hits = diverse(retrieval.Fuse(retrieval.RRFK, byName), k, perDoc)
	fs.SetAttributes(attribute.Int("agentbus.search.hits", len(hits)))
	fs.End()
	return hits, runs, nil
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
