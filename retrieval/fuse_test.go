package retrieval

import (
	"math"
	"slices"
	"testing"
)

func hits(ids ...string) []Hit {
	out := make([]Hit, len(ids))
	for i, id := range ids {
		out[i] = Hit{ID: id, Text: "text of " + id}
	}
	return out
}

type fused struct {
	id    string
	score float64
	ranks map[string]int
}

func TestFuse(t *testing.T) {
	tests := []struct {
		name  string
		k     int
		lists map[string][]Hit
		want  []fused
	}{
		{"empty input", 60, nil, nil},
		{"empty lists", 60, map[string][]Hit{"bm25": nil, "vector": {}}, nil},
		{"one profile keeps its order", 60, map[string][]Hit{"bm25": hits("a", "b")}, []fused{
			{"a", 1.0 / 61, map[string]int{"bm25": 1}},
			{"b", 1.0 / 62, map[string]int{"bm25": 2}},
		}},
		{"agreement wins", 60, map[string][]Hit{"bm25": hits("a", "b", "c"), "vector": hits("b", "c", "a")}, []fused{
			{"b", 1.0/62 + 1.0/61, map[string]int{"bm25": 2, "vector": 1}},
			{"a", 1.0/61 + 1.0/63, map[string]int{"bm25": 1, "vector": 3}},
			{"c", 1.0/63 + 1.0/62, map[string]int{"bm25": 3, "vector": 2}},
		}},
		{"present in one profile only", 60, map[string][]Hit{"bm25": hits("a", "x"), "vector": hits("a", "y", "z")}, []fused{
			{"a", 1.0/61 + 1.0/61, map[string]int{"bm25": 1, "vector": 1}},
			{"x", 1.0 / 62, map[string]int{"bm25": 2}},
			{"y", 1.0 / 62, map[string]int{"vector": 2}},
			{"z", 1.0 / 63, map[string]int{"vector": 3}},
		}},
		// Mirrored ranks: same score, same best rank, so ID decides.
		{"tie broken by ID", 60, map[string][]Hit{"bm25": hits("q", "p"), "vector": hits("p", "q")}, []fused{
			{"p", 1.0/62 + 1.0/61, map[string]int{"bm25": 2, "vector": 1}},
			{"q", 1.0/61 + 1.0/62, map[string]int{"bm25": 1, "vector": 2}},
		}},
		{"tie broken by best single rank", 1, map[string][]Hit{
			// k=1, so scores are exact binary fractions. n, s, z1, z4 are
			// each at rank 1 in one profile: 1/2. r is at rank 3 in two:
			// 1/4+1/4 = 1/2 too, but its best rank 3 loses to their 1,
			// although "r" < "s" < "z1" < "z4". Among the rank-1 four, ID.
			"a": hits("z1", "m", "r", "z2", "z3", "o"),
			"b": hits("z4", "m", "r"),
			"c": hits("o"),
			"d": hits("s"),
			"e": hits("n"),
		}, nil},
		{"duplicate IDs in a list count once at their best rank", 60, map[string][]Hit{"bm25": hits("a", "b", "a"), "vector": hits("b")}, []fused{
			{"b", 1.0/62 + 1.0/61, map[string]int{"bm25": 2, "vector": 1}},
			{"a", 1.0 / 61, map[string]int{"bm25": 1}},
		}},
		{"k <= 0 means 60", 0, map[string][]Hit{"bm25": hits("a", "b")}, []fused{
			{"a", 1.0 / 61, map[string]int{"bm25": 1}},
			{"b", 1.0 / 62, map[string]int{"bm25": 2}},
		}},
		{"negative k means 60", -5, map[string][]Hit{"vector": hits("a")}, []fused{
			{"a", 1.0 / 61, map[string]int{"vector": 1}},
		}},
		{"other k", 10, map[string][]Hit{"bm25": hits("a", "b"), "vector": hits("b")}, []fused{
			{"b", 1.0/12 + 1.0/11, map[string]int{"bm25": 2, "vector": 1}},
			{"a", 1.0 / 11, map[string]int{"bm25": 1}},
		}},
	}
	// Fill in the tie-break case by hand (see its comment).
	tests[6].want = []fused{
		{"m", 1.0/3 + 1.0/3, map[string]int{"a": 2, "b": 2}},
		{"o", 1.0/2 + 1.0/7, map[string]int{"a": 6, "c": 1}},
		{"n", 1.0 / 2, map[string]int{"e": 1}},
		{"s", 1.0 / 2, map[string]int{"d": 1}},
		{"z1", 1.0 / 2, map[string]int{"a": 1}},
		{"z4", 1.0 / 2, map[string]int{"b": 1}},
		{"r", 1.0/4 + 1.0/4, map[string]int{"a": 3, "b": 3}},
		{"z2", 1.0 / 5, map[string]int{"a": 4}},
		{"z3", 1.0 / 6, map[string]int{"a": 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Fuse(tt.k, tt.lists)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d hits %v, want %d", len(got), ids(got), len(tt.want))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.ID != w.id || math.Abs(g.RRFScore-w.score) > 1e-12 {
					t.Errorf("hit %d = %s %.15f, want %s %.15f (all: %v)", i, g.ID, g.RRFScore, w.id, w.score, ids(got))
				}
				if !mapsEqual(g.Ranks.Map(), w.ranks) {
					t.Errorf("hit %s ranks %v, want %v", g.ID, g.Ranks, w.ranks)
				}
				var profiles []string
				for p := range w.ranks {
					profiles = append(profiles, p)
				}
				slices.Sort(profiles)
				if !slices.Equal(g.Profiles, profiles) {
					t.Errorf("hit %s profiles %v, want %v", g.ID, g.Profiles, profiles)
				}
				if g.Text != "text of "+g.ID {
					t.Errorf("hit %s lost its fields: %+v", g.ID, g)
				}
			}
		})
	}
}

func ids(hs []Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.ID
	}
	return out
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestFuseDoesNotModifyInput(t *testing.T) {
	in := map[string][]Hit{"bm25": hits("a", "b"), "vector": hits("b")}
	in["bm25"][0].Score = 7
	Fuse(60, in)
	if h := in["bm25"][0]; h.RRFScore != 0 || h.Ranks != nil || h.Profiles != nil || h.Score != 7 {
		t.Errorf("input hit modified: %+v", h)
	}
}
