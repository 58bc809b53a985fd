package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbus/agentbus/querykind"
	"github.com/agentbus/agentbus/retrieval"
)

// Names of the fused runs in a Report.
const (
	// RRF is the ensemble: every profile's list (and, for a comparison,
	// each side's) fused by weighted Reciprocal Rank Fusion.
	RRF = "rrf"
	// RRFRerank is RRF reordered by Config.Reranker.
	RRFRerank = "rrf+rerank"
)

// ErrConfig: the Config is not usable.
var ErrConfig = errors.New("eval: invalid config")

// Config says what to evaluate.
type Config struct {
	// Backend is searched. Required.
	Backend retrieval.Backend
	// Tenant is whose index is searched. Required.
	Tenant string
	// K is the cut-off of every metric; default 10.
	K int
	// Depth is how many chunk hits each search asks for, so that K
	// distinct documents remain after mapping chunks to documents;
	// default 5×K.
	Depth int
	// Profiles are run one by one and fused as RRF; default every
	// profile of the backend.
	Profiles []string
	// Weights weigh the profiles' lists in RRF; nil means
	// retrieval.DefaultProfileWeights(), an empty map weighs all alike.
	Weights retrieval.ProfileWeights
	// Reranker reorders RRF's hits for the rrf+rerank run; default
	// retrieval.Deterministic{}.
	Reranker retrieval.Reranker
	// Raw searches each query's text as given. By default the text
	// searched is what query understanding keeps
	// (querykind.Understanding.Search: framing words such as "how do I"
	// or "compare" removed), and a comparison's sides are searched as
	// lists of their own in RRF, as the search agent does.
	Raw bool
}

func (c *Config) setDefaults() {
	if c.K <= 0 {
		c.K = 10
	}
	if c.Depth <= 0 {
		c.Depth = 5 * c.K
	}
	if len(c.Profiles) == 0 && c.Backend != nil {
		c.Profiles = c.Backend.Profiles()
	}
	if c.Weights == nil {
		c.Weights = retrieval.DefaultProfileWeights()
	}
	if c.Reranker == nil {
		c.Reranker = retrieval.Deterministic{}
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Backend == nil {
		errs = append(errs, fmt.Errorf("%w: Backend is required", ErrConfig))
	}
	if c.Tenant == "" {
		errs = append(errs, fmt.Errorf("%w: Tenant is required", ErrConfig))
	}
	if c.Depth < c.K {
		errs = append(errs, fmt.Errorf("%w: Depth %d is below K %d", ErrConfig, c.Depth, c.K))
	}
	return errors.Join(errs...)
}

// QueryScore is how one query went in one run.
type QueryScore struct {
	ID     string  `json:"id"`
	NDCG   float64 `json:"ndcg"`
	Recall float64 `json:"recall"`
	MRR    float64 `json:"mrr"`
	// Docs are the first K documents found, best first.
	Docs []string `json:"docs"`
}

// RunScore is one profile's (or the ensemble's) result: means over the
// judged queries, and each query's scores.
type RunScore struct {
	Name    string       `json:"name"`
	NDCG    float64      `json:"ndcg"`
	Recall  float64      `json:"recall"`
	MRR     float64      `json:"mrr"`
	Latency float64      `json:"mean_latency_ms"`
	Queries []QueryScore `json:"queries"`
	// Degraded counts ensemble searches in which some profile failed.
	Degraded int `json:"degraded,omitempty"`
	// Fallback is the first reason the reranker fell back, if it did.
	Fallback string `json:"fallback,omitempty"`
}

// Report is a whole evaluation.
type Report struct {
	Backend string `json:"backend"`
	// Reranker names the reranker of the rrf+rerank run.
	Reranker string `json:"reranker"`
	// Understood says whether queries went through query understanding.
	Understood bool   `json:"understood"`
	Tenant     string `json:"tenant"`
	K          int    `json:"k"`
	// Queries is how many queries were scored: those with at least one
	// relevant judgement.
	Queries int `json:"queries"`
	// Unjudged are query ids without a relevant judgement (not scored);
	// Unknown are judged query ids with no query text.
	Unjudged []string   `json:"unjudged,omitempty"`
	Unknown  []string   `json:"unknown,omitempty"`
	Runs     []RunScore `json:"runs"`
}

// Run scores every judged query with every profile and with the RRF
// ensemble of them. A failing search stops it.
func Run(ctx context.Context, cfg Config, queries []Query, qrels Qrels) (Report, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	rep := Report{Backend: cfg.Backend.Name(), Tenant: cfg.Tenant, K: cfg.K, Reranker: cfg.Reranker.Name(), Understood: !cfg.Raw}
	var judged []Query
	known := map[string]bool{}
	for _, q := range queries {
		known[q.ID] = true
		if !anyRelevant(qrels[q.ID]) {
			rep.Unjudged = append(rep.Unjudged, q.ID)
			continue
		}
		judged = append(judged, q)
	}
	for id := range qrels {
		if !known[id] {
			rep.Unknown = append(rep.Unknown, id)
		}
	}
	slices.Sort(rep.Unknown)
	rep.Queries = len(judged)
	if len(judged) == 0 {
		return rep, fmt.Errorf("%w: no query has a relevant judgement", ErrConfig)
	}
	for _, name := range append(slices.Clone(cfg.Profiles), RRF, RRFRerank) {
		run := RunScore{Name: name}
		var took time.Duration
		for _, q := range judged {
			start := time.Now()
			hits, degraded, err := search(ctx, cfg, name, q.Text)
			if err == nil && run.Fallback == "" && name == RRFRerank && hits.fallback != "" {
				run.Fallback = hits.fallback
			}
			took += time.Since(start)
			if err != nil {
				return rep, fmt.Errorf("eval: query %s (%q), %s: %w", q.ID, q.Text, name, err)
			}
			if degraded {
				run.Degraded++
			}
			docs := documents(hits.hits)
			rel := qrels[q.ID]
			run.Queries = append(run.Queries, QueryScore{ID: q.ID, NDCG: NDCG(docs, rel, cfg.K),
				Recall: Recall(docs, rel, cfg.K), MRR: MRR(docs, rel, cfg.K), Docs: top(docs, cfg.K)})
		}
		for _, s := range run.Queries {
			run.NDCG += s.NDCG
			run.Recall += s.Recall
			run.MRR += s.MRR
		}
		n := float64(len(run.Queries))
		run.NDCG, run.Recall, run.MRR = run.NDCG/n, run.Recall/n, run.MRR/n
		run.Latency = float64(took.Microseconds()) / 1000 / n
		rep.Runs = append(rep.Runs, run)
	}
	return rep, nil
}

func anyRelevant(j Judgements) bool {
	for _, g := range j {
		if g > 0 {
			return true
		}
	}
	return false
}

// found is one search's hits and, when reranked, the reranker's fallback.
type found struct {
	hits     []retrieval.Hit
	fallback string
}

// search runs one query of one run: a profile alone, RRF or RRF reranked.
func search(ctx context.Context, cfg Config, name, text string) (found, bool, error) {
	u := querykind.Understand(text)
	if !cfg.Raw {
		text = u.Search
	}
	q := retrieval.Query{Text: text, K: cfg.Depth}
	if name != RRF && name != RRFRerank {
		hits, err := cfg.Backend.Search(ctx, cfg.Tenant, name, q)
		return found{hits: hits}, false, err
	}
	lists := map[string][]retrieval.Hit{}
	degraded, failed := false, 0
	var errs []error
	add := func(list, profile, text string) {
		hits, err := cfg.Backend.Search(ctx, cfg.Tenant, profile, retrieval.Query{Text: text, K: cfg.Depth})
		if err != nil {
			degraded, failed = true, failed+1
			errs = append(errs, fmt.Errorf("%s: %w", list, err))
			return
		}
		lists[list] = hits
	}
	for _, p := range cfg.Profiles {
		add(p, p, text)
		if cfg.Raw {
			continue
		}
		for i, side := range u.Sides {
			add(fmt.Sprintf("%s:side%d", p, i+1), p, side)
		}
	}
	if len(lists) == 0 {
		return found{}, true, fmt.Errorf("%w: %w", retrieval.ErrAllProfilesFailed, errors.Join(errs...))
	}
	hits := retrieval.FuseWeighted(retrieval.RRFK, lists, cfg.Weights.Of)
	if len(hits) > cfg.Depth {
		hits = hits[:cfg.Depth]
	}
	if name == RRF {
		return found{hits: hits}, degraded, nil
	}
	rr, err := cfg.Reranker.Rerank(ctx, retrieval.RerankQuery{Text: text, Identifiers: u.Identifiers}, hits)
	if err != nil {
		return found{}, degraded, err
	}
	return found{hits: rr.Hits, fallback: rr.Fallback}, degraded, nil
}

// documents maps chunk hits to their documents, each at the rank of its
// first chunk.
func documents(hits []retrieval.Hit) []string {
	out := make([]string, 0, len(hits))
	seen := make(map[string]bool, len(hits))
	for _, h := range hits {
		id := h.DocID
		if id == "" {
			id, _, _ = strings.Cut(h.ID, "#")
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// WriteTable prints the means of every run as an aligned table.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%d queries, k=%d, tenant %s, backend %s\n", r.Queries, r.K, r.Tenant, r.Backend)
	if !r.Understood {
		fmt.Fprintf(tw, "queries searched as given (no query understanding)\n")
	}
	fmt.Fprintf(tw, "RUN\tNDCG@%d\tRECALL@%d\tMRR@%d\tMEAN LATENCY\t\n", r.K, r.K, r.K)
	for _, run := range r.Runs {
		note := ""
		if run.Degraded > 0 {
			note = fmt.Sprintf("(%d degraded)", run.Degraded)
		}
		if run.Name == RRFRerank {
			note = strings.TrimSpace(note + " reranker " + r.Reranker)
			if run.Fallback != "" {
				note += ", fell back: " + run.Fallback
			}
		}
		fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%.4f\t%.2f ms\t%s\n", run.Name, run.NDCG, run.Recall, run.MRR, run.Latency, note)
	}
	if len(r.Unjudged) > 0 {
		fmt.Fprintf(tw, "not scored (no relevant judgement): %s\n", strings.Join(r.Unjudged, ", "))
	}
	if len(r.Unknown) > 0 {
		fmt.Fprintf(tw, "judged but not in the queries: %s\n", strings.Join(r.Unknown, ", "))
	}
	return tw.Flush()
}
