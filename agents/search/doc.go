// Package search is the built-in search agent (capability "search"): it
// searches the requesting tenant's index through a retrieval.Backend and
// returns ranked hits.
//
// Data enters as the step's input ({"query", "ensemble", "profiles", "k",
// "filters"}) and the outputs of the planning steps it depends on:
// profile_selection (which profiles, whether to fuse), entity_extraction
// (a date range) and query_enhancement (query variants). In an ensemble
// every (profile × query) pair is searched in parallel and the rankings
// are fused with Reciprocal Rank Fusion; a failing profile degrades to the
// others and is reported. Data leaves as the step's output (schema
// "agent.search.output") and progress events.
//
// Ranked lists are named "<profile>" for the original query and
// "<profile>:v<n>" for the n-th variant (n from 1); a fused hit's ranks
// and profiles use these names.
package search
