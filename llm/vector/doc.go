// Package vector owns what agentbus does with text vectors without a
// model: the Embedder interface every embedder satisfies, LocalEmbedder
// (the deterministic, offline feature-hashing embedder used when no
// embeddings endpoint is configured), Tokenize and Cosine.
//
// Data enters as text and leaves as L2-normalised vectors. The package
// imports the standard library and a SIMD kernel library only, never a
// model client, so that readers of the agent registry (package discovery,
// and through it the Go SDK) do not link one; package llm, which holds the
// model-backed embedders, keeps these names as aliases. Everything here is
// safe for concurrent use.
package vector
