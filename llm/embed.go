package llm

import "github.com/agentbus/agentbus/llm/vector"

// Embedder turns texts into vectors of a fixed dimension: vector.Embedder,
// named here too for the embedders of this package.
type Embedder = vector.Embedder

// LocalEmbedder is vector.LocalEmbedder, the deterministic, offline
// feature-hashing embedder agentbus uses when no embeddings endpoint is
// configured.
type LocalEmbedder = vector.LocalEmbedder

// Tokenize lower-cases text and splits it into words of letters and
// digits, dropping stopwords (vector.Tokenize).
func Tokenize(text string) []string { return vector.Tokenize(text) }

// Cosine returns the cosine similarity of two vectors of equal length; 0
// if the lengths differ or either vector is zero (vector.Cosine).
func Cosine(a, b []float32) float64 { return vector.Cosine(a, b) }
