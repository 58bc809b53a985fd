// Package llm owns agentbus's access to language models: chat completions
// through an OpenAI-compatible endpoint (Chat), and embeddings, with
// deterministic offline fallbacks so that everything works with no model.
//
// Data enters as text and leaves as vectors. The Embedder in use always says
// what it is (Name), so a caller can report the active choice instead of
// hiding it. The Embedder interface and the offline hashing embedder are
// package llm/vector's (named here too), so that what only reads vectors
// does not link a model client. Everything here is safe for concurrent
// use.
package llm
