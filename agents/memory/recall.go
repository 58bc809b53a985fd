package memory

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/llm"
)

// minCosine is the embedding similarity below which a fact is not
// relevant on its own.
const minCosine = 0.25

// predicateWords lets a query about a topic ("where do I live?") find
// facts whose object does not repeat it.
var predicateWords = map[string]string{
	PredicateName: "name called", PredicateIs: "who role job", PredicateWorksAt: "work job company employer",
	PredicateWorksOn: "work project", PredicateWorksWith: "work tool language stack use", PredicatePrefers: "prefer preference",
	PredicateLivesIn: "live location city country", PredicateLikes: "like favourite favorite", PredicateNote: "note remember",
}

// recall picks the facts relevant to query: all of them when there are
// no more than RecallLimit, else the best RecallLimit by similarity, best
// first either way. An explicit recall whose query matches no fact in
// particular ("what do you know about me?") gets the newest ones.
func (a *Agent) recall(ctx context.Context, query string, facts []Fact, explicit bool) ([]Fact, string, error) {
	byNewest := func(x, y Fact) int { return cmp.Or(cmp.Compare(y.StoredAt, x.StoredAt), cmp.Compare(x.Key, y.Key)) }
	few := len(facts) <= a.cfg.RecallLimit
	ranking := "lexical"
	q := words(query)
	scores := make([]float64, len(facts))
	relevant := make([]bool, len(facts))
	for i, f := range facts {
		scores[i] = overlap(q, words(factText(f)))
		relevant[i] = scores[i] > 0
	}
	if e := a.cfg.Embedder; e != nil {
		ranking = "lexical+" + e.Name()
		texts := []string{query}
		for _, f := range facts {
			texts = append(texts, factText(f))
		}
		vs, err := e.Embed(ctx, texts)
		if err != nil || len(vs) != len(texts) {
			return nil, "", fmt.Errorf("memory: embed with %s: %w", e.Name(), err)
		}
		for i := range facts {
			c := llm.Cosine(vs[0], vs[i+1])
			scores[i] = 0.6*scores[i] + 0.4*c
			relevant[i] = relevant[i] || c >= minCosine
		}
	}
	var out []Fact
	for i, f := range facts {
		if relevant[i] || few {
			f.Score = math.Round(scores[i]*1e4) / 1e4
			out = append(out, f)
		}
	}
	if len(out) == 0 && explicit {
		out = slices.Clone(facts)
		slices.SortFunc(out, byNewest)
		ranking = "newest"
	}
	if few {
		ranking = "all, " + ranking
	}
	slices.SortStableFunc(out, func(x, y Fact) int { return cmp.Or(cmp.Compare(y.Score, x.Score), byNewest(x, y)) })
	return nonNil(out[:min(len(out), a.cfg.RecallLimit)]), ranking, nil
}

func nonNil(fs []Fact) []Fact {
	if fs == nil {
		return []Fact{}
	}
	return fs
}

// factText is what a fact is matched on.
func factText(f Fact) string {
	return predicateWords[f.Predicate] + " " + f.Object + " " + f.Sentence
}

// words tokenises like the rest of agentbus and folds a plural "s".
func words(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range llm.Tokenize(text) {
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		out[w] = true
	}
	return out
}

// overlap is the cosine of two word sets.
func overlap(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return float64(n) / math.Sqrt(float64(len(a)*len(b)))
}
