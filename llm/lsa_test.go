package llm_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/llm"
)

// lsaCorpus has two topics whose documents share words only within the
// topic, so that LSA must put "mutex" near "lock" and far from "gzip".
func lsaCorpus() []string {
	locks := []string{"mutex lock unlock goroutine", "rwmutex reader writer lock", "lock contention goroutine waits",
		"mutex protects shared state", "reader lock writer lock goroutine"}
	zips := []string{"gzip compress stream", "deflate compress bytes", "gzip reader decompress stream",
		"zlib deflate checksum", "compress level gzip writer"}
	var out []string
	for i := range 20 { // each topic's sentences, 4 times over
		out = append(out, locks[i%len(locks)], zips[i%len(zips)])
	}
	return out
}

func TestTrainLSA(t *testing.T) {
	ctx := t.Context()
	m, err := llm.TrainLSA(ctx, lsaCorpus(), llm.LSAConfig{Dim: 2, MaxDFRatio: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := llm.TrainLSA(ctx, lsaCorpus(), llm.LSAConfig{Dim: 2, MaxDFRatio: 0.9})
	if !strings.HasPrefix(m.Name(), "local-lsa-2-") || m.Name() != again.Name() {
		t.Fatalf("names %q and %q: want the same local-lsa-2-<hash>", m.Name(), again.Name())
	}
	v, err := m.Embed(ctx, []string{"mutex", "lock", "gzip", "nothing known here"})
	if err != nil || len(v) != 4 || len(v[0]) != 2 {
		t.Fatalf("Embed: %d vectors, %v", len(v), err)
	}
	var norm float64
	for _, x := range v[0] {
		norm += float64(x) * float64(x)
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Fatalf("|v| = %f, want 1", math.Sqrt(norm))
	}
	// "mutex" and "lock" never occur alone together in a query, but
	// share documents: LSA puts them close; "gzip" is far.
	if near, far := llm.Cosine(v[0], v[1]), llm.Cosine(v[0], v[2]); near < 0.8 || far > 0.3 {
		t.Fatalf("cos(mutex, lock) %.2f, cos(mutex, gzip) %.2f: want ≥ 0.8 and ≤ 0.3", near, far)
	}
	if llm.Cosine(v[3], v[0]) != 0 {
		t.Fatal("a text with no known word should embed as zero")
	}
	if _, err := llm.TrainLSA(ctx, lsaCorpus()[:3], llm.LSAConfig{Dim: 8}); !errors.Is(err, llm.ErrLSA) {
		t.Fatalf("too small a corpus: %v, want ErrLSA", err)
	}
}

func TestLSARoundTrip(t *testing.T) {
	m, err := llm.TrainLSA(t.Context(), lsaCorpus(), llm.LSAConfig{Dim: 2, MaxDFRatio: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := m.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := llm.ReadLSA(&buf)
	if err != nil || back.Name() != m.Name() || back.Dim() != 2 || back.TrainedOn() != len(lsaCorpus()) {
		t.Fatalf("read back %v, %v", back, err)
	}
	a, _ := m.Embed(t.Context(), []string{"mutex lock"})
	b, _ := back.Embed(t.Context(), []string{"mutex lock"})
	if llm.Cosine(a[0], b[0]) < 0.9999 {
		t.Fatal("the model read back embeds differently")
	}
	if _, err := llm.ReadLSA(strings.NewReader("junk")); !errors.Is(err, llm.ErrLSA) {
		t.Fatalf("junk: %v", err)
	}
}
