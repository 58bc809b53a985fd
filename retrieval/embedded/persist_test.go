package embedded_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/retrieval/retrievaltest"
)

var queries = []retrieval.Query{
	{Text: "the gateway throttles rate limits", K: 5},
	{Text: "checkpoint replays workflow steps after a restart", K: 8},
	{Text: "invoice totals", K: 3, Filters: retrieval.Filters{Metadata: map[string]string{"team": "b"}}},
}

func snapshot(t *testing.T, ix *embedded.Index) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, q := range queries {
		for _, p := range ix.Profiles() {
			hits, err := ix.Search(t.Context(), retrievaltest.TenantA, p, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != q.Limit() {
				t.Fatalf("%s %q: %d hits, want %d", p, q.Text, len(hits), q.Limit())
			}
			for _, h := range hits {
				out[p+" "+q.Text] = append(out[p+" "+q.Text], h.ID+" "+h.Text)
			}
		}
	}
	return out
}

func TestReopenAnswersTheSame(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir)
	chunks := corpus(300, 1)
	if err := ix.Index(t.Context(), retrievaltest.TenantA, chunks); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, ix)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	tdir := filepath.Join(dir, retrievaltest.TenantA)
	for _, name := range []string{"chunks.gob", "vectors.hnsw", "bleve"} {
		if _, err := os.Stat(filepath.Join(tdir, name)); err != nil {
			t.Errorf("after Close: %v", err)
		}
	}

	ix = open(t, dir)
	if n, err := ix.Count(t.Context(), retrievaltest.TenantA); err != nil || n != len(chunks) {
		t.Fatalf("Count after reopen = %d, %v; want %d", n, err, len(chunks))
	}
	if after := snapshot(t, ix); !mapsEqual(before, after) {
		t.Errorf("reopened index answers differently:\nbefore %v\nafter  %v", before, after)
	}
	hits, err := ix.Search(t.Context(), retrievaltest.TenantA, retrieval.ProfileBM25, retrieval.Query{Text: chunks[42].Text, K: 1})
	if err != nil || len(hits) != 1 {
		t.Fatalf("bm25 after reopen: %v, %v", hits, err)
	}
	h := hits[0]
	if h.ID != chunks[42].ID || h.Title != chunks[42].Title || retrieval.MetadataString(h.Metadata["n"]) != "42" {
		t.Errorf("hit after reopen = %+v, want chunk 42 with its fields", h)
	}

	// An index written after the graph was saved must not load the stale graph.
	if err := ix.Index(t.Context(), retrievaltest.TenantA, corpus(10, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tdir, "vectors.hnsw")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("vectors.hnsw still there after a change: %v", err)
	}
}

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestEmbedderChangeReembeds(t *testing.T) {
	dir := t.TempDir()
	ix, err := embedded.Open(embedded.Config{Dir: dir, Embedder: llm.LocalEmbedder{Dim: 256}})
	if err != nil {
		t.Fatal(err)
	}
	chunks := corpus(50, 3)
	if err := ix.Index(t.Context(), retrievaltest.TenantA, chunks); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix, err = embedded.Open(embedded.Config{Dir: dir, Embedder: llm.LocalEmbedder{Dim: 64}})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if !strings.Contains(ix.Name(), "local-hash-64") || ix.Embedder().Name() != "local-hash-64" {
		t.Errorf("Name() = %q, Embedder() = %s", ix.Name(), ix.Embedder().Name())
	}
	hits, err := ix.Search(t.Context(), retrievaltest.TenantA, retrieval.ProfileVector, retrieval.Query{Text: chunks[7].Title + "\n" + chunks[7].Text, K: 3})
	if err != nil {
		t.Fatalf("vector search after an embedder change: %v", err)
	}
	if len(hits) == 0 || hits[0].ID != chunks[7].ID {
		t.Errorf("vector search after re-embedding: %v, want %s first", retrievaltest.IDs(hits), chunks[7].ID)
	}
}

// TestOpenLocksTheDirectory: an index directory is open in one place at a
// time; a second Open fails at once with ErrLocked (bleve would block on
// its first search instead), and succeeds after Close.
func TestOpenLocksTheDirectory(t *testing.T) {
	dir := t.TempDir()
	ix, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := embedded.Open(embedded.Config{Dir: dir}); !errors.Is(err, embedded.ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix2, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	_ = ix2.Close()
}
