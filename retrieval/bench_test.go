package retrieval

import (
	"strconv"
	"testing"
)

// BenchmarkFuse3x100 fuses three profiles of 100 hits each whose IDs
// overlap by half between neighbouring profiles (goal: < 50 µs/op).
func BenchmarkFuse3x100(b *testing.B) {
	lists := map[string][]Hit{}
	for p, name := range []string{"bm25", "vector", "hybrid"} {
		l := make([]Hit, 100)
		for i := range l {
			id := "doc" + strconv.Itoa(p*50+i) + "#0"
			l[i] = Hit{ID: id, DocID: id[:len(id)-2], Text: "chunk text", Score: float64(100 - i)}
		}
		lists[name] = l
	}
	b.ReportAllocs()
	for b.Loop() {
		if out := Fuse(RRFK, lists); len(out) != 200 {
			b.Fatalf("%d fused hits", len(out))
		}
	}
}
