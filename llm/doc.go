// Package llm owns agentbus's access to language models: chat completions
// through an OpenAI-compatible endpoint (Chat), and embeddings, with
// deterministic offline fallbacks so that everything works with no model.
//
// Data enters as text and leaves as vectors. The Embedder in use always says
// what it is (Name), so a caller can report the active choice instead of
// hiding it. Everything here is safe for concurrent use.
package llm
