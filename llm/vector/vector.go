package vector

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"unicode"

	"github.com/viterin/vek/vek32"
)

// Embedder turns texts into vectors of a fixed dimension.
type Embedder interface {
	// Name says which embedder this is, e.g. "local-hash-256".
	Name() string
	// Embed returns one L2-normalised vector per text.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// LocalEmbedder is a deterministic, offline embedder: feature hashing of
// word unigrams, word bigrams and character trigrams into Dim buckets with
// signed hashes, L2-normalised. It captures lexical overlap, not meaning;
// it is what agentbus uses when no embeddings endpoint is configured, and it
// says so in its Name.
type LocalEmbedder struct {
	// Dim is the vector dimension; default 256.
	Dim int
}

var _ Embedder = LocalEmbedder{}

func (e LocalEmbedder) dim() int {
	if e.Dim <= 0 {
		return 256
	}
	return e.Dim
}

// Name is "local-hash-<dim>".
func (e LocalEmbedder) Name() string { return "local-hash-" + itoa(e.dim()) }

// Embed embeds each text.
func (e LocalEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = e.vector(t)
	}
	return out, nil
}

func (e LocalEmbedder) vector(text string) []float32 {
	v := make([]float32, e.dim())
	words := Tokenize(text)
	add := func(feature string, weight float32) {
		h := fnv.New64a()
		_, _ = h.Write([]byte(feature))
		x := h.Sum64()
		sign := float32(1)
		if x>>63 == 1 {
			sign = -1
		}
		v[x%uint64(len(v))] += sign * weight
	}
	for i, w := range words {
		add("w:"+w, 1)
		if i > 0 {
			add("b:"+words[i-1]+" "+w, 0.5)
		}
		padded := "^" + w + "$"
		for j := 0; j+3 <= len(padded); j++ {
			add("c:"+padded[j:j+3], 0.25)
		}
	}
	Normalize(v)
	return v
}

// stopwords are dropped by Tokenize: they carry no routing signal.
var stopwords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"on": true, "for": true, "with": true, "is": true, "are": true, "was": true, "be": true, "it": true,
	"this": true, "that": true, "me": true, "my": true, "i": true, "you": true, "what": true, "how": true,
	"please": true, "can": true, "do": true, "does": true, "from": true, "by": true, "at": true, "as": true,
}

// Tokenize lower-cases text and splits it into words of letters and digits,
// dropping stopwords.
func Tokenize(text string) []string {
	fields := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := fields[:0]
	for _, f := range fields {
		if !stopwords[f] {
			out = append(out, f)
		}
	}
	return out
}

// Normalize scales v to unit length in place (a zero vector stays zero).
func Normalize(v []float32) {
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm > 0 {
		inv := float32(1 / math.Sqrt(norm))
		for i := range v {
			v[i] *= inv
		}
	}
}

// Cosine returns the cosine similarity of two vectors of equal length,
// with vek's SIMD kernels (exact search over thousands of chunks spends its
// time here); 0 if the lengths differ or either vector is zero.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 || zero(a) || zero(b) {
		return 0
	}
	return float64(vek32.CosineSimilarity(a, b))
}

func zero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
