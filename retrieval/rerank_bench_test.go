package retrieval_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
)

// benchHits are n fused hits of chunk size (about 800 characters).
func benchHits(n int) []retrieval.Hit {
	words := strings.Fields("the reader writer lock protects shared state while goroutines read and write " +
		"values concurrently a mutex serialises access and the zero value is ready for use callers must not copy it")
	out := make([]retrieval.Hit, n)
	for i := range out {
		var b strings.Builder
		for j := 0; b.Len() < 800; j++ {
			b.WriteString(words[(i*7+j)%len(words)])
			b.WriteByte(' ')
		}
		doc := fmt.Sprintf("go/pkg%d", i%7)
		out[i] = retrieval.Hit{ID: fmt.Sprintf("%s#%d", doc, i), DocID: doc,
			Title: fmt.Sprintf("package pkg%d (pkg%d) › type Thing%d", i%7, i%7, i), Text: b.String()}
	}
	return out
}

// BenchmarkRerank measures the deterministic reranker on 20 fused hits
// against no reranking (the baseline: the fused order as it is).
func BenchmarkRerank(b *testing.B) {
	hits := benchHits(20)
	q := retrieval.RerankQuery{Text: "sync.RWMutex readers writer lock goroutines", Identifiers: []string{"sync.RWMutex"}}
	b.Run("none", func(b *testing.B) {
		for b.Loop() {
			_ = hits[:min(len(hits), 10)]
		}
	})
	b.Run("deterministic", func(b *testing.B) {
		r := retrieval.Deterministic{}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Rerank(b.Context(), q, hits); err != nil {
				b.Fatal(err)
			}
		}
	})
}
