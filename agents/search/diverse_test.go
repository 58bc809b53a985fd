package search

import (
	"fmt"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
)

// TestDiverse: the cap keeps the fused order and at most perDoc hits of a
// document, filling k from further down; -1 keeps the plain top k.
func TestDiverse(t *testing.T) {
	var hits []retrieval.Hit
	for i, doc := range []string{"a", "a", "a", "a", "b", "a", "c", "b", "b", "d"} {
		hits = append(hits, retrieval.Hit{ID: fmt.Sprintf("%s#%d", doc, i), DocID: doc})
	}
	ids := func(hs []retrieval.Hit) string {
		s := ""
		for _, h := range hs {
			s += h.ID + " "
		}
		return s
	}
	for _, c := range []struct {
		k, perDoc int
		want      string
	}{
		{5, 2, "a#0 a#1 b#4 c#6 b#7 "},
		{3, 1, "a#0 b#4 c#6 "},
		{10, 3, "a#0 a#1 a#2 b#4 c#6 b#7 b#8 d#9 "},
		{4, -1, "a#0 a#1 a#2 a#3 "},
		{20, -1, ids(hits)},
	} {
		if got := ids(diverse(hits, c.k, c.perDoc)); got != c.want {
			t.Errorf("diverse(k=%d, perDoc=%d) = %s, want %s", c.k, c.perDoc, got, c.want)
		}
	}
}
