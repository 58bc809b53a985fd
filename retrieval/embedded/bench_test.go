package embedded_test

import (
	"context"
	"go/build"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
)

// goComments cuts the doc comments of Go's own standard library into
// chunks of a few lines: realistic English technical text.
func goComments(max int) []retrieval.Chunk {
	root := filepath.Join(build.Default.GOROOT, "src")
	var out []retrieval.Chunk
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || len(out) >= max {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "testdata") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		var para []string
		flush := func() {
			if text := strings.Join(para, " "); len(text) > 120 && len(out) < max {
				id := "go" + strconv.Itoa(len(out))
				rel, _ := filepath.Rel(root, path)
				out = append(out, retrieval.Chunk{ID: id + "#0", DocID: id, Title: rel, Text: text, Source: rel})
			}
			para = para[:0]
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if c, ok := strings.CutPrefix(line, "//"); ok && !strings.HasPrefix(c, "go:") {
				para = append(para, strings.TrimSpace(c))
				if len(para) == 6 {
					flush()
				}
				continue
			}
			flush()
		}
		return nil
	})
	return out
}

var benchQueries = []string{
	"how to parse a time zone from a string",
	"goroutine blocked on a closed channel",
	"copy bytes from a reader to a writer until EOF",
	"TLS handshake certificate verification",
	"sort a slice with a custom comparison",
	"garbage collector write barrier",
}

func benchIndex(b *testing.B, cfg embedded.Config) *embedded.Index {
	b.Helper()
	chunks := goComments(4000)
	if len(chunks) < 2000 {
		b.Skipf("only %d comment chunks under GOROOT", len(chunks))
	}
	cfg.Dir = b.TempDir()
	ix, err := embedded.Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ix.Close() })
	for i := 0; i < len(chunks); i += 500 {
		if err := ix.Index(context.Background(), "bench", chunks[i:min(i+500, len(chunks))]); err != nil {
			b.Fatal(err)
		}
	}
	n, _ := ix.Count(context.Background(), "bench")
	b.ReportMetric(float64(n), "chunks")
	return ix
}

// BenchmarkSearch compares each profile alone with the ensemble of both on
// a few thousand chunks of Go doc comments: "graph" makes the vector
// profile walk the HNSW graph; "exact" (the default at this size, see
// Config.ExactMax) compares the query with every vector.
func BenchmarkSearch(b *testing.B) {
	for _, mode := range []struct {
		name string
		cfg  embedded.Config
	}{
		{"graph", embedded.Config{ExactMax: -1}},
		{"exact", embedded.Config{ExactMax: 1 << 30}},
	} {
		ix := benchIndex(b, mode.cfg)
		run := func(b *testing.B, search func(q retrieval.Query) error) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := search(retrieval.Query{Text: benchQueries[i%len(benchQueries)], K: 10}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		}
		for _, p := range ix.Profiles() {
			b.Run(mode.name+"/"+p, func(b *testing.B) {
				run(b, func(q retrieval.Query) error {
					_, err := ix.Search(context.Background(), "bench", p, q)
					return err
				})
			})
		}
		b.Run(mode.name+"/ensemble", func(b *testing.B) {
			run(b, func(q retrieval.Query) error {
				_, err := retrieval.Ensemble(context.Background(), ix, "bench", nil, q)
				return err
			})
		})
	}
}
