package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
)

// TestSampleCorpusAfterAnInterruptedStart: a serve stopped while indexing
// the sample corpus leaves its marker, and the next start indexes the
// whole corpus again instead of keeping the part it had; a finished index
// is left alone.
func TestSampleCorpusAfterAnInterruptedStart(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes the whole sample corpus")
	}
	ctx := context.Background()
	dir := t.TempDir()
	b, err := embedded.Open(embedded.Config{Dir: filepath.Join(dir, "index")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// What an interrupted first start leaves: its marker and one chunk.
	marker := filepath.Join(dir, "sample-corpus.default.indexing")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Index(ctx, "default", []retrieval.Chunk{{ID: "go/bufio#0", DocID: "go/bufio", Text: "Package bufio implements buffered I/O."}}); err != nil {
		t.Fatal(err)
	}
	if err := indexSampleCorpus(ctx, b, "default", dir, log, io.Discard); err != nil {
		t.Fatal(err)
	}
	n, err := b.Count(ctx, "default")
	if err != nil || n < 6000 {
		t.Fatalf("after the resumed start: %d chunks (%v), want the whole corpus", n, err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("marker left after a finished indexing: %v", err)
	}
	// A finished index, or one the user filled, is not indexed again.
	var logged bytes.Buffer
	if err := indexSampleCorpus(ctx, b, "default", dir, slog.New(slog.NewTextHandler(&logged, nil)), io.Discard); err != nil {
		t.Fatal(err)
	}
	if logged.Len() > 0 {
		t.Fatalf("a second start did something: %s", logged.String())
	}
}
