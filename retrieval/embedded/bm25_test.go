package embedded

import (
	"testing"

	"github.com/agentbus/agentbus/retrieval"
)

func TestIdentifierParts(t *testing.T) {
	for in, want := range map[string]string{
		"sync.RWMutex":                "sync.RWMutex sync RWMutex",
		"use http.Client.Do, (twice)": "use http.Client.Do, (twice) http Client Do",
		"errors.Is vs errors.As?":     "errors.Is vs errors.As? errors Is errors As",
		"no identifiers here.":        "no identifiers here.",
		"v1.2 and e.g":                "v1.2 and e.g v1 2 e g",
		"":                            "",
	} {
		if got := identifierParts(in); got != want {
			t.Errorf("identifierParts(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBM25MatchesIdentifierParts: the package documenting RWMutex under
// its own heading is found for "sync.RWMutex", which its text never
// quotes whole.
func TestBM25MatchesIdentifierParts(t *testing.T) {
	ix, err := Open(Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	chunks := []retrieval.Chunk{
		{ID: "go/sync#1", DocID: "go/sync", Title: "package sync (sync) › type RWMutex", Text: "A RWMutex is a reader/writer mutual exclusion lock."},
		{ID: "go/bytes#1", DocID: "go/bytes", Title: "package bytes (bytes) › func Compare", Text: "Compare returns an integer comparing two byte slices."},
	}
	if err := ix.Index(t.Context(), "acme", chunks); err != nil {
		t.Fatal(err)
	}
	hits, err := ix.Search(t.Context(), "acme", retrieval.ProfileBM25, retrieval.Query{Text: "sync.RWMutex"})
	if err != nil || len(hits) != 1 || hits[0].ID != "go/sync#1" {
		t.Fatalf("hits %+v, %v: want go/sync#1 alone", hits, err)
	}
}
