package retrievaltest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
)

// Tenants the suite indexes into. TenantEmpty is never indexed.
const (
	TenantA     = "acme"
	TenantB     = "globex"
	TenantEmpty = "initech"
)

// Chunks makes a small corpus: one single-chunk document per text, the
// i-th with DocID "<prefix>-<i>" and chunk ID "<prefix>-<i>#0".
func Chunks(prefix string, texts ...string) []retrieval.Chunk {
	out := make([]retrieval.Chunk, len(texts))
	for i, text := range texts {
		doc := fmt.Sprintf("%s-%d", prefix, i)
		out[i] = retrieval.Chunk{ID: doc + "#0", DocID: doc, Text: text, Source: "retrievaltest"}
	}
	return out
}

// IDs returns the hits' IDs in order.
func IDs(hits []retrieval.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func index(t *testing.T, b retrieval.Backend, tenant string, chunks []retrieval.Chunk) {
	t.Helper()
	if err := b.Index(t.Context(), tenant, chunks); err != nil {
		t.Fatalf("Index(%s, %d chunks): %v", tenant, len(chunks), err)
	}
}

func search(t *testing.T, b retrieval.Backend, tenant, profile string, q retrieval.Query) []retrieval.Hit {
	t.Helper()
	hits, err := b.Search(t.Context(), tenant, profile, q)
	if err != nil {
		t.Fatalf("Search(%s, %s, %q): %v", tenant, profile, q.Text, err)
	}
	checkWellFormed(t, profile, hits)
	return hits
}

// checkWellFormed checks what holds for every result list: unique IDs and
// scores that never increase.
func checkWellFormed(t *testing.T, profile string, hits []retrieval.Hit) {
	t.Helper()
	seen := make(map[string]bool, len(hits))
	for i, h := range hits {
		if seen[h.ID] {
			t.Errorf("%s: hit %q returned twice in %v", profile, h.ID, IDs(hits))
		}
		seen[h.ID] = true
		if i > 0 && h.Score > hits[i-1].Score {
			t.Errorf("%s: hit %d (%s, score %g) scores above hit %d (score %g)", profile, i, h.ID, h.Score, i-1, hits[i-1].Score)
		}
	}
}

func count(t *testing.T, b retrieval.Backend, tenant string) int {
	t.Helper()
	n, err := b.Count(t.Context(), tenant)
	if err != nil {
		t.Fatalf("Count(%s): %v", tenant, err)
	}
	return n
}

// profiles are the two profiles every backend offers.
var profiles = []string{retrieval.ProfileBM25, retrieval.ProfileVector}

func sortedIDs(hits []retrieval.Hit) []string {
	ids := IDs(hits)
	slices.Sort(ids)
	return ids
}
