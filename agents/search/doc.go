// Package search is the built-in search agent (capability "search"): it
// searches the requesting tenant's index through a retrieval.Backend and
// returns ranked hits.
//
// Data enters as the step's input ({"query", "ensemble", "profiles", "k",
// "filters"}) and the outputs of the planning steps it depends on:
// profile_selection (which profiles, whether to fuse), entity_extraction
// (a date range) and query_enhancement (query variants). The query goes
// through query understanding (querykind.Understand) first: what is
// searched is its content words and Go identifiers, never its instruction
// and framing words ("compare", "in detail", "how do I"); a comparison's
// sides are searched as lists of their own, and each side's best hits are
// reported under "sides" and kept among the hits. In an ensemble every
// (profile × query) pair is searched in parallel and the rankings are
// fused with weighted Reciprocal Rank Fusion (retrieval.FuseWeighted); a
// failing profile degrades to the others and is reported. The fused hits
// are then reranked (retrieval.Deterministic by default, an LLM reranker
// when configured, which falls back to the deterministic one) and the
// output's "rerank" says which ran and why it fell back. Data leaves as
// the step's output (schema "agent.search.output") and progress events.
//
// Ranked lists are named "<profile>" for the query's search text,
// "<profile>:v<n>" for the n-th variant and "<profile>:side<n>" for the
// n-th side of a comparison (n from 1); a fused hit's ranks and profiles
// use these names.
package search
