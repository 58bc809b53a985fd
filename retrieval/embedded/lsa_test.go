package embedded_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
)

// topicChunks are n chunks on two topics that share words only within a
// topic.
func topicChunks(n, from int) []retrieval.Chunk {
	locks := []string{"mutex lock unlock goroutine", "rwmutex reader writer lock", "lock contention goroutine waits",
		"mutex protects shared state", "reader lock writer lock goroutine"}
	zips := []string{"gzip compress stream", "deflate compress bytes", "gzip reader decompress stream",
		"zlib deflate checksum", "compress level gzip writer"}
	out := make([]retrieval.Chunk, n)
	for i := range out {
		text, doc := locks[(from+i)%len(locks)], "locks"
		if (from+i)%2 == 1 {
			text, doc = zips[(from+i)%len(zips)], "zips"
		}
		out[i] = retrieval.Chunk{ID: fmt.Sprintf("%s#%d", doc, from+i), DocID: doc, Text: text}
	}
	return out
}

func TestLSAVectors(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	lsa := &llm.LSAConfig{Dim: 4, MaxDFRatio: 0.9}
	ix, err := embedded.Open(embedded.Config{Dir: dir, LSA: lsa})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ix.Name(), "local-lsa-4 trained per tenant") {
		t.Fatalf("name %q", ix.Name())
	}
	// Below 4×Dim chunks: the hashing embedder at the model's dimension.
	if err := ix.Index(ctx, "acme", topicChunks(10, 0)); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "acme", "lsa.model")
	if _, err := os.Stat(model); !os.IsNotExist(err) {
		t.Fatalf("a model after 10 chunks: %v", err)
	}
	// At 16 the tenant trains its model and re-embeds every chunk with it.
	if err := ix.Index(ctx, "acme", topicChunks(10, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(model); err != nil {
		t.Fatalf("no model after 20 chunks: %v", err)
	}
	hits, err := ix.Search(ctx, "acme", retrieval.ProfileVector, retrieval.Query{Text: "mutex", K: 20})
	if err != nil || len(hits) == 0 || hits[0].DocID != "locks" {
		t.Fatalf("hits %v, %v: want the locks chunks first", hits, err)
	}
	first := hits[0].ID
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened, the model is read back: the same answer, no retraining.
	before, _ := os.Stat(model)
	ix, err = embedded.Open(embedded.Config{Dir: dir, LSA: lsa})
	if err != nil {
		t.Fatal(err)
	}
	hits, err = ix.Search(ctx, "acme", retrieval.ProfileVector, retrieval.Query{Text: "mutex", K: 20})
	if err != nil || len(hits) == 0 || hits[0].ID != first {
		t.Fatalf("reopened: hits %v, %v: want %s first", hits, err, first)
	}
	if after, _ := os.Stat(model); !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("reopening retrained the model")
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}

	// Back to the hashing embedder: the tenant is re-embedded on open.
	ix, err = embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	hits, err = ix.Search(ctx, "acme", retrieval.ProfileVector, retrieval.Query{Text: "gzip compress", K: 5})
	if err != nil || len(hits) == 0 || hits[0].DocID != "zips" || len(hits) > 5 {
		t.Fatalf("hashing again: hits %v, %v", hits, err)
	}
}
