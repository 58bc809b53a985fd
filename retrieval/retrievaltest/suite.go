package retrievaltest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
)

// Run runs the conformance suite against backends made by newBackend,
// which must return a fresh, empty backend for each subtest and arrange
// for its Close (t.Cleanup). Every backend must offer the profiles
// retrieval.ProfileBM25 (matching any query term, best BM25 score first)
// and retrieval.ProfileVector (nearest neighbours of the query's
// embedding).
func Run(t *testing.T, newBackend func(t *testing.T) retrieval.Backend) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(*testing.T, retrieval.Backend)
	}{
		{"Profiles", testProfiles},
		{"TenantIsolation", testIsolation},
		{"ReindexReplaces", testReplace},
		{"BM25RareTermFirst", testBM25Rare},
		{"VectorNearest", testVectorNearest},
		{"KLimits", testK},
		{"HitFields", testHitFields},
		{"UnknownProfile", testUnknownProfile},
		{"InvalidTenant", testInvalidTenant},
		{"InvalidDocument", testInvalidDocument},
		{"EmptyTenant", testEmptyTenant},
		{"DateFilter", testDateFilter},
		{"MetadataFilterKeepsK", testMetadataFilter},
		{"Concurrent", testConcurrent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newBackend(t)) })
	}
}

func testProfiles(t *testing.T, b retrieval.Backend) {
	got := b.Profiles()
	for _, p := range profiles {
		if !slices.Contains(got, p) {
			t.Errorf("Profiles() = %v, missing %q", got, p)
		}
	}
	if b.Name() == "" {
		t.Error("Name() is empty")
	}
}

var (
	isolationA = []string{
		"Kangaroos hop across the dry outback at dusk.",
		"Koalas sleep most of the day in eucalyptus trees.",
	}
	isolationB = []string{
		"Icebergs calve from the glacier into the fjord.",
		"Polar bears hunt seals on drifting sea ice.",
		"Walruses rest on the frozen shore.",
	}
)

func testIsolation(t *testing.T, b retrieval.Backend) {
	// The same chunk IDs in both tenants: neither may shadow the other.
	index(t, b, TenantA, Chunks("doc", isolationA...))
	index(t, b, TenantB, Chunks("doc", isolationB...))
	if n := count(t, b, TenantA); n != len(isolationA) {
		t.Errorf("Count(%s) = %d, want %d", TenantA, n, len(isolationA))
	}
	if n := count(t, b, TenantB); n != len(isolationB) {
		t.Errorf("Count(%s) = %d, want %d", TenantB, n, len(isolationB))
	}
	// Words found only in B's documents find nothing in A.
	if hits := search(t, b, TenantA, retrieval.ProfileBM25, retrieval.Query{Text: "icebergs glacier walruses"}); len(hits) != 0 {
		t.Errorf("bm25 in %s for %s's words: %v, want no hits", TenantA, TenantB, IDs(hits))
	}
	for _, tc := range []struct {
		tenant string
		own    []string
		query  string
	}{
		{TenantA, isolationA, "icebergs glacier polar bears"},
		{TenantA, isolationA, "kangaroos outback"},
		{TenantB, isolationB, "kangaroos koalas eucalyptus"},
		{TenantB, isolationB, "glacier fjord"},
	} {
		for _, p := range profiles {
			hits := search(t, b, tc.tenant, p, retrieval.Query{Text: tc.query})
			for _, h := range hits {
				if !slices.Contains(tc.own, h.Text) {
					t.Errorf("%s in %s for %q returned %s %q, which is not that tenant's", p, tc.tenant, tc.query, h.ID, h.Text)
				}
			}
			if p == retrieval.ProfileVector && len(hits) != len(tc.own) {
				t.Errorf("vector in %s: %d hits, want all %d of the tenant's chunks", tc.tenant, len(hits), len(tc.own))
			}
		}
	}
}

func testReplace(t *testing.T, b retrieval.Backend) {
	chunks := Chunks("fruit", "Apples ripen slowly in the autumn orchard.", "Cherries blossom in spring.")
	index(t, b, TenantA, chunks)
	replaced := chunks[0]
	replaced.Text = "Bananas grow on tropical plantations."
	replaced.Title = "Bananas"
	index(t, b, TenantA, []retrieval.Chunk{replaced})
	if n := count(t, b, TenantA); n != 2 {
		t.Errorf("Count after re-indexing one chunk = %d, want 2", n)
	}
	if hits := search(t, b, TenantA, retrieval.ProfileBM25, retrieval.Query{Text: "apples orchard"}); len(hits) != 0 {
		t.Errorf("bm25 for the replaced text: %v, want no hits", IDs(hits))
	}
	for _, p := range profiles {
		hits := search(t, b, TenantA, p, retrieval.Query{Text: "bananas tropical plantations"})
		if len(hits) == 0 || hits[0].ID != replaced.ID {
			t.Fatalf("%s for the new text: %v, want %s first", p, IDs(hits), replaced.ID)
		}
		if hits[0].Text != replaced.Text || hits[0].Title != replaced.Title {
			t.Errorf("%s: replaced hit has title %q text %q, want %q %q", p, hits[0].Title, hits[0].Text, replaced.Title, replaced.Text)
		}
	}
}

func testBM25Rare(t *testing.T, b retrieval.Backend) {
	chunks := Chunks("note",
		"Weekly status report for the platform team.",
		"Status of the billing migration: on track.",
		"Status update on hiring and onboarding.",
		"Quarterly status review of the support queue.",
		"Status notes from the design sync.",
		"The zeppelin hangar roof needs new panels.",
	)
	index(t, b, TenantA, chunks)
	hits := search(t, b, TenantA, retrieval.ProfileBM25, retrieval.Query{Text: "status zeppelin"})
	if len(hits) == 0 || hits[0].ID != chunks[5].ID {
		t.Fatalf("bm25 for %q: %v, want %s (the rare term) first", "status zeppelin", IDs(hits), chunks[5].ID)
	}
	if len(hits) < 2 {
		t.Errorf("bm25 for %q: %v, want documents matching either term", "status zeppelin", IDs(hits))
	}
	if hits[0].Score <= 0 {
		t.Errorf("bm25 top score %g, want > 0", hits[0].Score)
	}
}

func testVectorNearest(t *testing.T, b retrieval.Backend) {
	chunks := Chunks("v",
		"Fresh sourdough bread cools on the bakery rack.",
		"The lighthouse keeper climbed the spiral staircase at dusk.",
		"The orchestra tuned their violins before the concert.",
		"A cyclist repaired a flat tyre by the roadside.",
	)
	index(t, b, TenantA, chunks)
	hits := search(t, b, TenantA, retrieval.ProfileVector, retrieval.Query{Text: "lighthouse keeper climbing the staircase", K: 2})
	if len(hits) != 2 || hits[0].ID != chunks[1].ID {
		t.Fatalf("vector: %v, want 2 hits with %s first", IDs(hits), chunks[1].ID)
	}
}

func testK(t *testing.T, b retrieval.Backend) {
	texts := make([]string, 15)
	for i := range texts {
		texts[i] = "Gardening note " + strings.Repeat("again ", i) + "about compost and seedlings."
	}
	index(t, b, TenantA, Chunks("k", texts...))
	for _, p := range profiles {
		for _, tc := range []struct{ k, want int }{{1, 1}, {3, 3}, {0, 10}, {15, 15}, {100, 15}} {
			hits := search(t, b, TenantA, p, retrieval.Query{Text: "gardening compost seedlings", K: tc.k})
			if len(hits) != tc.want {
				t.Errorf("%s with K=%d: %d hits, want %d", p, tc.k, len(hits), tc.want)
			}
		}
	}
}

func testHitFields(t *testing.T, b retrieval.Backend) {
	c := retrieval.Chunk{
		ID: "handbook#3", DocID: "handbook", Title: "Travel policy",
		Text:     "Economy class is booked for flights under six hours.",
		Source:   "handbook.md",
		Metadata: map[string]any{"team": "finance", "lang": "en"},
	}
	index(t, b, TenantA, append(Chunks("other", "Expense reports are due monthly."), c))
	for _, p := range profiles {
		hits := search(t, b, TenantA, p, retrieval.Query{Text: "economy class flights"})
		if len(hits) == 0 || hits[0].ID != c.ID {
			t.Fatalf("%s: %v, want %s first", p, IDs(hits), c.ID)
		}
		h := hits[0]
		if h.DocID != c.DocID || h.Title != c.Title || h.Text != c.Text || h.Source != c.Source {
			t.Errorf("%s: hit %+v does not carry the chunk's doc_id, title, text and source %+v", p, h, c)
		}
		for k, v := range c.Metadata {
			if got, ok := h.Metadata[k]; !ok || retrieval.MetadataString(got) != v {
				t.Errorf("%s: hit metadata %v, want %s=%v", p, h.Metadata, k, v)
			}
		}
	}
}

func testUnknownProfile(t *testing.T, b retrieval.Backend) {
	index(t, b, TenantA, Chunks("u", "Anything at all."))
	for _, tenant := range []string{TenantA, TenantEmpty} {
		_, err := b.Search(t.Context(), tenant, "no-such-profile", retrieval.Query{Text: "anything"})
		if !errors.Is(err, retrieval.ErrUnknownProfile) {
			t.Errorf("Search(%s, no-such-profile) error = %v, want ErrUnknownProfile", tenant, err)
		}
	}
}

func testInvalidTenant(t *testing.T, b retrieval.Backend) {
	for _, tenant := range []string{"", "Acme", "a.b", "../etc", "a b", "*", strings.Repeat("x", 64)} {
		if err := b.Index(t.Context(), tenant, Chunks("t", "Some text.")); !errors.Is(err, retrieval.ErrInvalidTenant) {
			t.Errorf("Index(%q) error = %v, want ErrInvalidTenant", tenant, err)
		}
		if _, err := b.Search(t.Context(), tenant, retrieval.ProfileBM25, retrieval.Query{Text: "text"}); !errors.Is(err, retrieval.ErrInvalidTenant) {
			t.Errorf("Search(%q) error = %v, want ErrInvalidTenant", tenant, err)
		}
		if _, err := b.Count(t.Context(), tenant); !errors.Is(err, retrieval.ErrInvalidTenant) {
			t.Errorf("Count(%q) error = %v, want ErrInvalidTenant", tenant, err)
		}
	}
}

func testInvalidDocument(t *testing.T, b retrieval.Backend) {
	index(t, b, TenantA, Chunks("keep", "A chunk that was there before."))
	good := Chunks("good", "Parrots mimic human speech.")[0]
	for _, bad := range []retrieval.Chunk{
		{ID: "", DocID: "x", Text: "Text without an id."},
		{ID: "noText#0", DocID: "noText", Text: ""},
	} {
		err := b.Index(t.Context(), TenantA, []retrieval.Chunk{good, bad})
		if !errors.Is(err, retrieval.ErrInvalidDocument) {
			t.Errorf("Index with chunk %+v: error = %v, want ErrInvalidDocument", bad, err)
		}
		if n := count(t, b, TenantA); n != 1 {
			t.Errorf("Count after a rejected batch = %d, want 1 (nothing half-written)", n)
		}
		if hits := search(t, b, TenantA, retrieval.ProfileBM25, retrieval.Query{Text: "parrots mimic speech"}); len(hits) != 0 {
			t.Errorf("bm25 finds %v from a rejected batch", IDs(hits))
		}
	}
}

func testEmptyTenant(t *testing.T, b retrieval.Backend) {
	if err := b.Index(t.Context(), TenantA, nil); err != nil {
		t.Errorf("Index with no chunks: %v", err)
	}
	for _, tenant := range []string{TenantA, TenantEmpty} {
		if n := count(t, b, tenant); n != 0 {
			t.Errorf("Count(%s) = %d, want 0", tenant, n)
		}
		for _, p := range profiles {
			if hits := search(t, b, tenant, p, retrieval.Query{Text: "anything at all"}); len(hits) != 0 {
				t.Errorf("%s in empty tenant %s: %v, want none", p, tenant, IDs(hits))
			}
		}
	}
}
