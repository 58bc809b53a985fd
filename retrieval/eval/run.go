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

	"github.com/agentbus/agentbus/retrieval"
)

// RRF is the name of the ensemble run in a Report.
const RRF = "rrf"

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
}

// Report is a whole evaluation.
type Report struct {
	Backend string `json:"backend"`
	Tenant  string `json:"tenant"`
	K       int    `json:"k"`
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
	rep := Report{Backend: cfg.Backend.Name(), Tenant: cfg.Tenant, K: cfg.K}
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
	for _, name := range append(slices.Clone(cfg.Profiles), RRF) {
		run := RunScore{Name: name}
		var took time.Duration
		for _, q := range judged {
			start := time.Now()
			hits, degraded, err := search(ctx, cfg, name, q.Text)
			took += time.Since(start)
			if err != nil {
				return rep, fmt.Errorf("eval: query %s (%q), %s: %w", q.ID, q.Text, name, err)
			}
			if degraded {
				run.Degraded++
			}
			docs := documents(hits)
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

func search(ctx context.Context, cfg Config, name, text string) ([]retrieval.Hit, bool, error) {
	q := retrieval.Query{Text: text, K: cfg.Depth}
	if name != RRF {
		hits, err := cfg.Backend.Search(ctx, cfg.Tenant, name, q)
		return hits, false, err
	}
	res, err := retrieval.Ensemble(ctx, cfg.Backend, cfg.Tenant, cfg.Profiles, q)
	return res.Hits, res.Degraded(), err
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
	fmt.Fprintf(tw, "RUN\tNDCG@%d\tRECALL@%d\tMRR@%d\tMEAN LATENCY\t\n", r.K, r.K, r.K)
	for _, run := range r.Runs {
		note := ""
		if run.Degraded > 0 {
			note = fmt.Sprintf("(%d degraded)", run.Degraded)
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
