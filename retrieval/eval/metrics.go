package eval

import (
	"cmp"
	"math"
	"slices"
)

// Judgements maps a document id to its graded relevance; 0 or absent is
// not relevant.
type Judgements map[string]int

// NDCG is the normalised discounted cumulative gain of ranked (document
// ids, best first) at cut-off k: Σ rel_i / log2(i+1) over ranks i = 1..k,
// divided by the same sum over the judgements sorted best first. It is 0
// when nothing is relevant.
func NDCG(ranked []string, rel Judgements, k int) float64 {
	dcg := 0.0
	for i, id := range top(ranked, k) {
		if g := rel[id]; g > 0 {
			dcg += float64(g) / math.Log2(float64(i+2))
		}
	}
	grades := make([]int, 0, len(rel))
	for _, g := range rel {
		if g > 0 {
			grades = append(grades, g)
		}
	}
	slices.SortFunc(grades, func(a, b int) int { return cmp.Compare(b, a) })
	idcg := 0.0
	for i, g := range grades[:min(k, len(grades))] {
		idcg += float64(g) / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

// Recall is the share of the relevant documents found in the first k of
// ranked; 0 when nothing is relevant.
func Recall(ranked []string, rel Judgements, k int) float64 {
	relevant := 0
	for _, g := range rel {
		if g > 0 {
			relevant++
		}
	}
	if relevant == 0 {
		return 0
	}
	found := 0
	for _, id := range top(ranked, k) {
		if rel[id] > 0 {
			found++
		}
	}
	return float64(found) / float64(relevant)
}

// MRR is the reciprocal rank of the first relevant document in the
// first k of ranked, 0 when there is none.
func MRR(ranked []string, rel Judgements, k int) float64 {
	for i, id := range top(ranked, k) {
		if rel[id] > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// top returns ranked without duplicates (first occurrence kept), cut to k.
func top(ranked []string, k int) []string {
	seen := make(map[string]bool, k)
	out := make([]string, 0, k)
	for _, id := range ranked {
		if len(out) == k {
			break
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
