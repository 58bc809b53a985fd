package eval_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/eval"
)

// scripted answers each (profile, query text) with fixed chunk ids, so
// that the expected scores can be worked out by hand; it stands in for a
// ranking, which is what is under test here, not a backend.
type scripted struct {
	lists map[string]map[string][]string // profile → query → chunk ids
	fail  string                         // a profile that errors
}

func (s scripted) Name() string       { return "scripted" }
func (s scripted) Profiles() []string { return []string{"bm25", "vector"} }
func (s scripted) Close() error       { return nil }
func (s scripted) Index(context.Context, string, []retrieval.Chunk) error {
	return nil
}
func (s scripted) Count(context.Context, string) (int, error) { return 0, nil }

func (s scripted) Search(_ context.Context, _, profile string, q retrieval.Query) ([]retrieval.Hit, error) {
	if profile == s.fail {
		return nil, errors.New("down")
	}
	ids, ok := s.lists[profile]
	if !ok {
		return nil, retrieval.ErrUnknownProfile
	}
	var hits []retrieval.Hit
	for _, id := range ids[q.Text] {
		doc, _, _ := strings.Cut(id, "#")
		hits = append(hits, retrieval.Hit{ID: id, DocID: doc, Text: id})
	}
	return hits[:min(len(hits), q.Limit())], nil
}

func TestRun(t *testing.T) {
	b := scripted{lists: map[string]map[string][]string{
		"bm25":   {"alpha": {"a#0", "a#1", "b#0"}, "beta": nil},
		"vector": {"alpha": {"c#0", "b#1", "a#0"}, "beta": {"d#0"}},
	}}
	queries := []eval.Query{{ID: "q1", Text: "alpha"}, {ID: "q2", Text: "unjudged"}, {ID: "q3", Text: "beta"}}
	qrels := eval.Qrels{"q1": {"a": 2, "b": 1}, "q2": {"z": 0}, "q3": {"d": 1}, "q9": {"a": 1}}
	// Equal weights, and a reranker that reverses: the sums below are RRF's.
	rep, err := eval.Run(t.Context(), eval.Config{Backend: b, Tenant: "acme", K: 2, Weights: retrieval.ProfileWeights{},
		Reranker: reverse{}}, queries, qrels)
	if err != nil {
		t.Fatal(err)
	}
	l3 := math.Log2(3)
	// q1 (a: 2, b: 1; ideal DCG@2 = 2 + 1/log2(3)):
	//   bm25   a#0 a#1 b#0 → docs a, b: NDCG 1, recall 1, MRR 1.
	//   vector c#0 b#1 a#0 → c, b: DCG = 1/log2(3); recall ½; MRR ½.
	//   rrf    a#0 = 1/61 + 1/63, c#0 = 1/61, a#1 = b#1 = 1/62 (a#1
	//          first by id), b#0 = 1/63 → a, c, b: DCG = 2; recall ½; MRR 1.
	// q3 (d: 1): bm25 finds nothing (0, 0, 0); vector and rrf find d
	// first (1, 1, 1).
	want := map[string][3]float64{ // run → mean NDCG, recall, MRR
		"bm25":   {(1 + 0) / 2.0, (1 + 0) / 2.0, (1 + 0) / 2.0},
		"vector": {((1/l3)/(2+1/l3) + 1) / 2, (0.5 + 1) / 2, (0.5 + 1) / 2},
		"rrf":    {(2/(2+1/l3) + 1) / 2, (0.5 + 1) / 2, (1 + 1) / 2},
	}
	if rep.Queries != 2 || len(rep.Unjudged) != 1 || rep.Unjudged[0] != "q2" || len(rep.Unknown) != 1 || rep.Unknown[0] != "q9" {
		t.Errorf("report: %d queries, unjudged %v, unknown %v: want 2, [q2], [q9]", rep.Queries, rep.Unjudged, rep.Unknown)
	}
	if len(rep.Runs) != 4 || rep.Runs[3].Name != eval.RRFRerank || rep.Reranker != "reverse" || !rep.Understood {
		t.Fatalf("runs %+v, reranker %q: want bm25, vector, rrf, rrf+rerank by reverse", rep.Runs, rep.Reranker)
	}
	// Reversed, q1's 5 fused hits are b#0 a#1 b#1 c#0 a#0: docs b, a.
	if got := rep.Runs[3].Queries[0].Docs; strings.Join(got, ",") != "b,a" || rep.Runs[3].Fallback != "fell" {
		t.Errorf("rrf+rerank q1 docs %v, fallback %q: want [b a], \"fell\"", got, rep.Runs[3].Fallback)
	}
	for _, run := range rep.Runs[:3] {
		w, ok := want[run.Name]
		if !ok {
			t.Errorf("unexpected run %q", run.Name)
			continue
		}
		if !near(run.NDCG, w[0]) || !near(run.Recall, w[1]) || !near(run.MRR, w[2]) {
			t.Errorf("%s: NDCG %.4f recall %.4f MRR %.4f, want %.4f %.4f %.4f", run.Name, run.NDCG, run.Recall, run.MRR, w[0], w[1], w[2])
		}
		if len(run.Queries) != 2 || run.Queries[0].ID != "q1" {
			t.Errorf("%s: per-query scores %+v", run.Name, run.Queries)
		}
	}
	if got := rep.Runs[2].Queries[0].Docs; strings.Join(got, ",") != "a,c" {
		t.Errorf("rrf q1 docs %v, want [a c]", got)
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"NDCG@2", "rrf", "0.8801", "not scored (no relevant judgement): q2", "judged but not in the queries: q9"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, buf.String())
		}
	}
}

// reverse is a reranker that reverses the hits and says it fell back.
type reverse struct{}

func (reverse) Name() string { return "reverse" }
func (reverse) Rerank(_ context.Context, _ retrieval.RerankQuery, hits []retrieval.Hit) (retrieval.Reranked, error) {
	out := slices.Clone(hits)
	slices.Reverse(out)
	return retrieval.Reranked{Hits: out, By: "reverse", Fallback: "fell"}, nil
}

func TestRunErrors(t *testing.T) {
	b := scripted{lists: map[string]map[string][]string{"bm25": {}, "vector": {}}, fail: "vector"}
	qs := []eval.Query{{ID: "q1", Text: "x"}}
	if _, err := eval.Run(t.Context(), eval.Config{Backend: b, Tenant: "acme"}, qs, eval.Qrels{"q1": {"a": 1}}); err == nil || !strings.Contains(err.Error(), "q1") {
		t.Errorf("a failing profile: %v, want an error naming the query", err)
	}
	if _, err := eval.Run(t.Context(), eval.Config{Backend: b, Tenant: "acme", Profiles: []string{"bm25"}}, qs, eval.Qrels{"q1": {"a": 0}}); !errors.Is(err, eval.ErrConfig) {
		t.Errorf("nothing judged relevant: %v, want ErrConfig", err)
	}
	if _, err := eval.Run(t.Context(), eval.Config{Tenant: "acme"}, qs, nil); !errors.Is(err, eval.ErrConfig) {
		t.Errorf("no backend: %v, want ErrConfig", err)
	}
}
