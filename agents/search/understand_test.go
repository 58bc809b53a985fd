package search_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents/search"
	gocorpus "github.com/agentbus/agentbus/corpus"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/retrieval/ingest"
)

// goDocs is an embedded index of the shipped corpus (the Go standard
// library's documentation) for tenant "default".
func goDocs(t *testing.T) *embedded.Index {
	t.Helper()
	if testing.Short() {
		t.Skip("indexes the whole sample corpus")
	}
	ix, err := embedded.Open(embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	in, err := ingest.New(ingest.Config{Backend: ix, Tenant: "default", BatchSize: gocorpus.IndexBatch})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.JSONL(t.Context(), gocorpus.DocumentsName, gocorpus.Documents()); err != nil {
		t.Fatal(err)
	}
	return ix
}

// TestSearchComparison is the query: the instruction words are
// not searched, each side is searched as its own lists, both sides' best
// hits are sync's and are among the hits, and no unrelated package
// (crypto/ecdsa's "compared", bytes.Compare) is.
func TestSearchComparison(t *testing.T) {
	a := newAgent(t, goDocs(t))
	out, _, err := handle(t, a, request("default", `{"query":"compare sync.Mutex and sync.RWMutex in detail","ensemble":true}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	if out.Search != "sync.Mutex sync.RWMutex" || out.Intent != "compare" || !slices.Equal(out.Identifiers, []string{"sync.Mutex", "sync.RWMutex"}) {
		t.Fatalf("search %q intent %q identifiers %q", out.Search, out.Intent, out.Identifiers)
	}
	if out.Rerank == nil || out.Rerank.By != retrieval.RerankDeterministic || out.Rerank.Fallback != "" {
		t.Fatalf("rerank %+v, want deterministic without fallback", out.Rerank)
	}
	var lists []string
	for _, l := range out.Lists {
		lists = append(lists, l.Name+"="+l.Query)
	}
	want := []string{"bm25=sync.Mutex sync.RWMutex", "bm25:side1=sync.Mutex", "bm25:side2=sync.RWMutex",
		"vector=sync.Mutex sync.RWMutex", "vector:side1=sync.Mutex", "vector:side2=sync.RWMutex"}
	if !slices.Equal(lists, want) {
		t.Fatalf("lists %q, want %q", lists, want)
	}
	if len(out.Sides) != 2 || out.Sides[0].Name != "sync.Mutex" || out.Sides[1].Name != "sync.RWMutex" {
		t.Fatalf("sides %+v", out.Sides)
	}
	ids := map[string]string{}
	for _, h := range out.Hits {
		ids[h.ID] = h.DocID
		if h.DocID == "go/crypto/ecdsa" || h.DocID == "go/bytes" {
			t.Errorf("hit %s (%s) is unrelated to the comparison", h.ID, h.Title)
		}
	}
	if out.Hits[0].DocID != "go/sync" {
		t.Errorf("first hit %s, want go/sync's", out.Hits[0].ID)
	}
	for _, s := range out.Sides {
		if len(s.Hits) != 3 {
			t.Errorf("side %s: %d hits, want 3", s.Name, len(s.Hits))
		}
		if !strings.HasPrefix(s.Hits[0], "go/sync#") {
			t.Errorf("side %s: best hit %s, want go/sync's", s.Name, s.Hits[0])
		}
		for _, id := range s.Hits {
			if _, ok := ids[id]; !ok {
				t.Errorf("side %s: hit %s missing from the hits", s.Name, id)
			}
		}
	}
}

// failing is a reranker that always fails.
type failing struct{}

func (failing) Name() string { return "failing" }
func (failing) Rerank(context.Context, retrieval.RerankQuery, []retrieval.Hit) (retrieval.Reranked, error) {
	return retrieval.Reranked{}, errors.New("out of order")
}

// garbled is a chat model that answers with an id it was never shown.
type garbled struct{}

func (garbled) CompleteJSON(context.Context, string, string) (string, error) {
	return `{"ids": ["nowhere#0"]}`, nil
}

func TestSearchRerankFallback(t *testing.T) {
	m := newMem()
	corpus(t, m)
	llmR, err := retrieval.NewLLM(retrieval.LLMConfig{Chat: garbled{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		r        retrieval.Reranker
		by, fell string
	}{
		{"llm answers out of contract", llmR, retrieval.RerankDeterministic, `"nowhere#0", which was not among`},
		{"reranker fails", failing{}, retrieval.RerankNone, "out of order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := search.New(search.Config{Backend: m, Reranker: tc.r})
			if err != nil {
				t.Fatal(err)
			}
			out, rec, err := handle(t, a, request("acme", `{"query":"how do consumers acknowledge messages","ensemble":true}`, nil))
			if err != nil {
				t.Fatal(err)
			}
			if out.Rerank == nil || out.Rerank.By != tc.by || !strings.Contains(out.Rerank.Fallback, tc.fell) || len(out.Hits) == 0 {
				t.Fatalf("rerank %+v, %d hits: want by %s, fallback containing %q", out.Rerank, len(out.Hits), tc.by, tc.fell)
			}
			if !rec.Said("reranker " + tc.r.Name() + " fell back") {
				t.Fatalf("progress %q", rec.Messages())
			}
			if out.Search != "consumers acknowledge messages" || out.Intent != "explain" {
				t.Fatalf("search %q intent %q", out.Search, out.Intent)
			}
		})
	}
	a, err := search.New(search.Config{Backend: m, NoRerank: true})
	if err != nil {
		t.Fatal(err)
	}
	if out, _, err := handle(t, a, request("acme", `{"query":"consumer acknowledges"}`, nil)); err != nil || out.Rerank != nil {
		t.Fatalf("NoRerank: rerank %+v, %v", out.Rerank, err)
	}
}

func TestConfigWeights(t *testing.T) {
	_, err := search.New(search.Config{Backend: newMem(), Weights: retrieval.ProfileWeights{"vector": -1}})
	if err == nil || !strings.Contains(err.Error(), `profile "vector"`) {
		t.Fatalf("a negative weight: %v", err)
	}
}
