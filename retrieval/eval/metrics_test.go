package eval_test

import (
	"math"
	"testing"

	"github.com/agentbus/agentbus/retrieval/eval"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestMetrics(t *testing.T) {
	log2 := math.Log2
	tests := []struct {
		name              string
		ranked            []string
		rel               eval.Judgements
		k                 int
		ndcg, recall, mrr float64
		ndcgApprox        float64 // the same NDCG, worked out to 4 places
	}{
		{
			// top 3: d3 (1), d1 (2), d9 (0). DCG = 1/log2(2) + 2/log2(3)
			// = 1 + 1.26186 = 2.26186; ideal grades 2, 2, 1: IDCG =
			// 2/1 + 2/log2(3) + 1/log2(4) = 2 + 1.26186 + 0.5 = 3.76186;
			// NDCG = 0.60126. Recall: 2 of 4 relevant. MRR: d3 at rank 1.
			name: "graded", ranked: []string{"d3", "d1", "d9", "d2"}, k: 3,
			rel:  eval.Judgements{"d1": 2, "d2": 1, "d3": 1, "d4": 2},
			ndcg: (1/log2(2) + 2/log2(3)) / (2/log2(2) + 2/log2(3) + 1/log2(4)), ndcgApprox: 0.6013,
			recall: 0.5, mrr: 1,
		},
		{
			// d2 at rank 3: DCG = 1/log2(4) = 0.5, IDCG = 1/log2(2) = 1.
			name: "third", ranked: []string{"x", "y", "d2"}, k: 10, rel: eval.Judgements{"d2": 1},
			ndcg: 0.5, ndcgApprox: 0.5, recall: 1, mrr: 1.0 / 3,
		},
		{
			// A document repeated (two chunks) counts once: ranks d1, d2.
			// DCG = 2/log2(3) = 1.26186, IDCG = 2/log2(2) = 2 → 0.63093.
			name: "duplicates", ranked: []string{"d1", "d1", "d2"}, k: 2, rel: eval.Judgements{"d2": 2},
			ndcg: (2 / log2(3)) / 2, ndcgApprox: 0.6309, recall: 1, mrr: 0.5,
		},
		{
			name: "past the cut-off", ranked: []string{"a", "b", "d1"}, k: 2, rel: eval.Judgements{"d1": 1},
		},
		{
			// A grade-0 judgement is not relevant: IDCG = 1 (d2 alone).
			name: "judged irrelevant", ranked: []string{"d1", "d2"}, k: 10, rel: eval.Judgements{"d1": 0, "d2": 1},
			ndcg: 1 / log2(3), ndcgApprox: 0.6309, recall: 1, mrr: 0.5,
		},
		{name: "nothing relevant", ranked: []string{"a"}, k: 10, rel: eval.Judgements{"a": 0}},
		{name: "nothing found", ranked: nil, k: 10, rel: eval.Judgements{"a": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := eval.NDCG(tt.ranked, tt.rel, tt.k); !near(got, tt.ndcg) || math.Abs(got-tt.ndcgApprox) > 5e-5 {
				t.Errorf("NDCG = %.6f, want %.6f (≈ %.4f)", got, tt.ndcg, tt.ndcgApprox)
			}
			if got := eval.Recall(tt.ranked, tt.rel, tt.k); !near(got, tt.recall) {
				t.Errorf("Recall = %v, want %v", got, tt.recall)
			}
			if got := eval.MRR(tt.ranked, tt.rel, tt.k); !near(got, tt.mrr) {
				t.Errorf("MRR = %v, want %v", got, tt.mrr)
			}
		})
	}
}
