package embedded_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/retrieval/retrievaltest"
)

// TestReindexEveryChunkRepeatedly replaces every node of the graph, the
// top layer's included, several times: hnsw's Delete must not leave a
// graph that panics or loses nodes.
func TestReindexEveryChunkRepeatedly(t *testing.T) {
	ix, err := embedded.Open(embedded.Config{Dir: t.TempDir(), ExactMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	const n = 300
	for round := range uint64(4) {
		chunks := corpus(n, 10+round)
		for i := 0; i < n; i += 50 {
			if err := ix.Index(t.Context(), retrievaltest.TenantA, chunks[i:i+50]); err != nil {
				t.Fatal(err)
			}
		}
		if c, err := ix.Count(t.Context(), retrievaltest.TenantA); err != nil || c != n {
			t.Fatalf("round %d: Count = %d, %v; want %d", round, c, err, n)
		}
		found, tried := 0, 0
		for i := 0; i < n; i += 7 {
			q := retrieval.Query{Text: chunks[i].Title + "\n" + chunks[i].Text, K: 3}
			hits, err := ix.Search(t.Context(), retrievaltest.TenantA, retrieval.ProfileVector, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != 3 {
				t.Fatalf("round %d: %d hits, want 3", round, len(hits))
			}
			for _, h := range hits {
				if c := chunks[docNumber(t, h.DocID)]; h.Text != c.Text {
					t.Errorf("round %d: hit %s has text %q from before, want %q", round, h.ID, h.Text, c.Text)
				}
			}
			tried++
			if hits[0].ID == chunks[i].ID {
				found++
			}
		}
		// The walk is approximate: a chunk's own text need not always win.
		if recall := float64(found) / float64(tried); recall < 0.8 {
			t.Errorf("round %d: self-recall %.2f, want >= 0.8", round, recall)
		}
	}
}

func docNumber(t *testing.T, doc string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(doc, "doc"))
	if err != nil {
		t.Fatalf("doc id %q", doc)
	}
	return n
}

// TestFilteredVectorSearchThroughTheGraph forces the graph walk with
// over-fetching (BruteForceMax 1) and checks it against exact search.
func TestFilteredVectorSearchThroughTheGraph(t *testing.T) {
	dir := t.TempDir()
	ix, err := embedded.Open(embedded.Config{Dir: dir, BruteForceMax: 1, ExactMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	chunks := corpus(400, 5)
	if err := ix.Index(t.Context(), retrievaltest.TenantA, chunks); err != nil {
		t.Fatal(err)
	}
	q := retrieval.Query{Text: chunks[8].Title + "\n" + chunks[8].Text, K: 10,
		Filters: retrieval.Filters{Metadata: map[string]string{"team": "a"}}}
	hits, err := ix.Search(t.Context(), retrievaltest.TenantA, retrieval.ProfileVector, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 10 || hits[0].ID != chunks[8].ID {
		t.Fatalf("filtered vector search: %v, want 10 hits with %s first", retrievaltest.IDs(hits), chunks[8].ID)
	}
	for _, h := range hits {
		if h.Metadata["team"] != "a" {
			t.Errorf("hit %s has team %v", h.ID, h.Metadata["team"])
		}
	}
	// Exact answer: cosine with every team-a chunk.
	qv, _ := llm.LocalEmbedder{}.Embed(t.Context(), []string{q.Text})
	var exactBest float64
	for i, c := range chunks {
		if i%4 != 0 || i == 8 {
			continue
		}
		v, _ := llm.LocalEmbedder{}.Embed(t.Context(), []string{c.Title + "\n" + c.Text})
		exactBest = max(exactBest, llm.Cosine(qv[0], v[0]))
	}
	if got := hits[1].Score; got < exactBest-1e-6 {
		t.Errorf("second hit scores %g, the best other team-a chunk scores %g", got, exactBest)
	}
}

func TestNumericMetadataFilter(t *testing.T) {
	ix := open(t, t.TempDir())
	chunks := corpus(20, 6)
	if err := ix.Index(t.Context(), retrievaltest.TenantA, chunks); err != nil {
		t.Fatal(err)
	}
	for _, p := range ix.Profiles() {
		q := retrieval.Query{Text: chunks[13].Text, Filters: retrieval.Filters{Metadata: map[string]string{"n": "13"}}}
		hits, err := ix.Search(t.Context(), retrievaltest.TenantA, p, q)
		if err != nil || len(hits) != 1 || hits[0].ID != chunks[13].ID {
			t.Errorf("%s with n=13: %v, %v; want only %s", p, retrievaltest.IDs(hits), err, chunks[13].ID)
		}
	}
}

func TestClosedAndReads(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir)
	if _, err := ix.Search(t.Context(), "fresh", retrieval.ProfileBM25, retrieval.Query{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Count(t.Context(), "fresh"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "fresh")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a read created the tenant's directory: %v", err)
	}
	if err := ix.Index(t.Context(), retrievaltest.TenantA, corpus(3, 1)); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := ix.Index(t.Context(), retrievaltest.TenantA, corpus(1, 1)); !errors.Is(err, embedded.ErrClosed) {
		t.Errorf("Index after Close: %v, want ErrClosed", err)
	}
	if _, err := ix.Search(t.Context(), retrievaltest.TenantA, retrieval.ProfileVector, retrieval.Query{Text: "x"}); !errors.Is(err, embedded.ErrClosed) {
		t.Errorf("Search after Close: %v, want ErrClosed", err)
	}
	if _, err := ix.Count(t.Context(), retrievaltest.TenantA); !errors.Is(err, embedded.ErrClosed) {
		t.Errorf("Count after Close: %v, want ErrClosed", err)
	}
}

func TestConfig(t *testing.T) {
	_, err := embedded.Open(embedded.Config{EfSearch: -1, M: -1, BruteForceMax: -1})
	for _, want := range []string{"needs Dir", "EfSearch -1", "M -1", "BruteForceMax -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open error %v does not say %q", err, want)
		}
	}
	ix := open(t, t.TempDir())
	if got, want := ix.Name(), "embedded (bleve bm25 + hnsw vector, local-hash-256)"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
}
