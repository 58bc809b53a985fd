package vespa

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentbus/agentbus/retrieval"
)

// Result is one search's hits with the coverage Vespa reported.
type Result struct {
	Hits     []retrieval.Hit `json:"hits"`
	Coverage Coverage        `json:"coverage"`
	// TotalCount is how many documents matched (root.fields.totalCount).
	TotalCount int64 `json:"total_count"`
}

// Search runs one profile over tenant's chunks, best hit first; it is
// SearchWithCoverage without the coverage (which still reaches a
// CoverageRecorder in ctx and, when partial, the log).
func (b *Backend) Search(ctx context.Context, tenant, profile string, q retrieval.Query) ([]retrieval.Hit, error) {
	res, err := b.SearchWithCoverage(ctx, tenant, profile, q)
	return res.Hits, err
}

// SearchWithCoverage runs one profile over tenant's chunks:
// retrieval.ProfileBM25 as userQuery() ranked by the "bm25" rank profile,
// retrieval.ProfileVector as nearestNeighbor over the embeddings ranked by
// "semantic", each and-ed with q.Filters. A partial result (some content
// nodes timed out, match-phase limits) is returned with its hits and a
// Coverage saying so, never as an error; it is also logged and recorded in
// a CoverageRecorder carried by ctx. Vespa's errors (HTTP errors, entries
// in root.errors) are *Error values with Vespa's code and message.
func (b *Backend) SearchWithCoverage(ctx context.Context, tenant, profile string, q retrieval.Query) (Result, error) {
	doctype, err := b.DocType(tenant)
	if err != nil {
		return Result{}, err
	}
	if profile != retrieval.ProfileBM25 && profile != retrieval.ProfileVector {
		return Result{}, fmt.Errorf("%w: %q (vespa offers %v)", retrieval.ErrUnknownProfile, profile, b.Profiles())
	}
	k := q.Limit()
	yql, err := buildYQL(doctype, profile, k, q.Filters)
	if err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(q.Text) == "" {
		return Result{Hits: []retrieval.Hit{}, Coverage: fullCoverage}, nil
	}
	req := map[string]any{
		"yql":     yql,
		"hits":    k,
		"timeout": timeoutParam(b.cfg.Timeout),
	}
	switch profile {
	case retrieval.ProfileBM25:
		req["query"] = q.Text
		req["model.type"] = "weakAnd"
		req["ranking.profile"] = RankBM25
	case retrieval.ProfileVector:
		vecs, err := b.cfg.Embedder.Embed(ctx, []string{q.Text})
		if err != nil {
			return Result{}, fmt.Errorf("vespa: embedding the query with %s: %w", b.cfg.Embedder.Name(), err)
		}
		if len(vecs) != 1 {
			return Result{}, fmt.Errorf("vespa: embedder %s returned %d vectors for 1 text", b.cfg.Embedder.Name(), len(vecs))
		}
		req["input.query(q)"] = vecs[0]
		req["ranking.profile"] = RankSemantic
	}
	p, err := b.query(ctx, "search", doctype, req)
	if err != nil {
		return Result{}, err
	}
	p.hits = newestOnly(p.hits, p.gens)
	if len(p.hits) > k {
		p.hits = p.hits[:k]
	}
	res := Result{Hits: p.hits, Coverage: p.coverage, TotalCount: p.total}
	if r := recorderFrom(ctx); r != nil {
		r.add(CoverageReport{Tenant: tenant, Profile: profile, Coverage: res.Coverage})
	}
	if res.Coverage.Partial() {
		b.cfg.Logger.WarnContext(ctx, "vespa: partial coverage", "tenant", tenant, "profile", profile,
			"coverage", res.Coverage.Percent, "documents", res.Coverage.Documents,
			"reasons", strings.Join(res.Coverage.Reasons(), ","), "hits", len(res.Hits))
	}
	return res, nil
}

// Count is the number of chunks in tenant's document type: root.fields.
// totalCount of "select * from <doctype> where true" with no hits.
func (b *Backend) Count(ctx context.Context, tenant string) (int, error) {
	doctype, err := b.DocType(tenant)
	if err != nil {
		return 0, err
	}
	yql, _ := buildYQL(doctype, "", 0, retrieval.Filters{})
	p, err := b.query(ctx, "count", doctype, map[string]any{
		"yql":     yql,
		"hits":    0,
		"timeout": timeoutParam(b.cfg.Timeout),
	})
	if err != nil {
		return 0, err
	}
	if p.coverage.Partial() {
		b.cfg.Logger.WarnContext(ctx, "vespa: partial coverage in count", "tenant", tenant, "coverage", p.coverage.String())
	}
	return int(p.total), nil
}

// query POSTs a Query API request and reads the answer.
func (b *Backend) query(ctx context.Context, op, doctype string, req map[string]any) (parsed, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return parsed{}, fmt.Errorf("vespa: %s (%s): encoding the request: %w", op, doctype, err)
	}
	r, err := b.do(ctx, http.MethodPost, b.base+"/search/", body)
	if err != nil {
		return parsed{}, fmt.Errorf("%w: %s (%s): %w", ErrQuery, op, doctype, err)
	}
	return parseResult(op, doctype, r.status, r.body)
}
