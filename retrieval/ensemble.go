package retrieval

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// countOK counts the profiles that did not fail.
func countOK(runs []ProfileRun) int {
	n := 0
	for _, r := range runs {
		if r.Error == "" {
			n++
		}
	}
	return n
}

// ProfileRun is how one profile of an ensemble went.
type ProfileRun struct {
	Profile  string        `json:"profile"`
	Hits     int           `json:"hits"`
	Duration time.Duration `json:"duration_ns"`
	// Error is set when the profile failed; the ensemble went on without it.
	Error string `json:"error,omitempty"`
}

// Result is an ensemble search: the fused hits and how each profile went.
type Result struct {
	Hits     []Hit        `json:"hits"`
	Profiles []ProfileRun `json:"profiles"`
}

// Degraded reports whether some profile failed.
func (r Result) Degraded() bool {
	return slices.ContainsFunc(r.Profiles, func(p ProfileRun) bool { return p.Error != "" })
}

// Ensemble searches the tenant's index with every named profile in
// parallel, each asked for q.Limit() hits, and fuses the rankings with
// RRF (k = RRFK), keeping the best q.Limit(). A failing profile degrades
// to the others and is reported in Result.Profiles; only when every
// profile fails is the error ErrAllProfilesFailed. One profile is still
// returned in fused form (rrf_score, ranks, profiles set).
func Ensemble(ctx context.Context, b Backend, tenant string, profiles []string, q Query) (res Result, err error) {
	if len(profiles) == 0 {
		profiles = b.Profiles()
	}
	ctx, span := startSpan(ctx, "search ensemble", attrProfiles.StringSlice(profiles))
	defer func() {
		span.SetAttributes(attrHits.Int(len(res.Hits)), attrFailed.Int(len(res.Profiles)-countOK(res.Profiles)))
		endSpan(span, err)
	}()
	runs := make([]ProfileRun, len(profiles))
	lists := make([][]Hit, len(profiles))
	var wg sync.WaitGroup
	for i, p := range profiles {
		wg.Go(func() {
			start := time.Now()
			pctx, ps := startSpan(ctx, "search profile "+p, attrProfile.String(p))
			hits, err := b.Search(pctx, tenant, p, q)
			ps.SetAttributes(attrHits.Int(len(hits)))
			endSpan(ps, err)
			runs[i] = ProfileRun{Profile: p, Hits: len(hits), Duration: time.Since(start)}
			if err != nil {
				runs[i].Error = err.Error()
				return
			}
			lists[i] = hits
		})
	}
	wg.Wait()
	byName := make(map[string][]Hit, len(profiles))
	var failed []string
	for i, r := range runs {
		if r.Error != "" {
			failed = append(failed, r.Profile+": "+r.Error)
			continue
		}
		byName[r.Profile] = lists[i]
	}
	if len(byName) == 0 {
		return Result{Profiles: runs}, fmt.Errorf("%w: %v", ErrAllProfilesFailed, failed)
	}
	_, fs := startSpan(ctx, "search fusion", attribute.String("agentbus.search.fusion", "rrf"), attribute.Int("agentbus.search.rrf_k", RRFK))
	hits := Fuse(RRFK, byName)
	if len(hits) > q.Limit() {
		hits = hits[:q.Limit()]
	}
	fs.SetAttributes(attrHits.Int(len(hits)))
	fs.End()
	return Result{Hits: hits, Profiles: runs}, nil
}
