package retrieval

import (
	"cmp"
	"slices"
)

// Fuse merges ranked lists, one per profile, with Reciprocal Rank Fusion:
// a hit's rrf_score is Σ 1/(k + rank) over the profiles that found it, rank
// counted from 1 in each list. k ≤ 0 means RRFK. Hits are matched by ID; the
// first profile (in name order) that found a hit supplies its fields. Ties
// on rrf_score are broken by the best single rank, then by ID, so the
// result is deterministic. Duplicate IDs within one list count once, at
// their best rank.
func Fuse(k int, lists map[string][]Hit) []Hit {
	if k <= 0 {
		k = RRFK
	}
	names := make([]string, 0, len(lists))
	total := 0
	for name, hits := range lists {
		names = append(names, name)
		total += len(hits)
	}
	slices.Sort(names)
	index := make(map[string]int, total)
	out := make([]Hit, 0, total)
	best := make([]int, 0, total)
	// One backing array for every hit's Profiles; each hit's slice is
	// capped at len(names), so an append by a caller copies instead of
	// writing into its neighbour's.
	profiles := make([]string, total*len(names))
	for _, name := range names {
		for i, h := range lists[name] {
			rank := i + 1
			j, seen := index[h.ID]
			if !seen {
				j = len(out)
				index[h.ID] = j
				h.Ranks = make(map[string]int, len(names))
				off := len(out) * len(names)
				h.Profiles = profiles[off : off : off+len(names)]
				h.RRFScore = 0
				out = append(out, h)
				best = append(best, rank)
			}
			f := &out[j]
			if _, dup := f.Ranks[name]; dup {
				continue
			}
			f.Ranks[name] = rank
			f.Profiles = append(f.Profiles, name)
			f.RRFScore += 1 / float64(k+rank)
			best[j] = min(best[j], rank)
		}
	}
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(out[b].RRFScore, out[a].RRFScore); c != 0 {
			return c
		}
		if c := cmp.Compare(best[a], best[b]); c != 0 {
			return c
		}
		return cmp.Compare(out[a].ID, out[b].ID)
	})
	sorted := make([]Hit, len(out))
	for i, j := range order {
		sorted[i] = out[j]
	}
	return sorted
}
