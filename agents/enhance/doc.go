// Package enhance is the built-in query enhancement agent (capability
// "query_enhancement"), one of the planning agents that run before search.
// It rewrites a query for retrieval with a deterministic offline heuristic
// (an embedded thesaurus of common search, technical and everyday words,
// stop-word stripping and question-to-statement rules) or, when
// Config.LLM is set, an LLM whose answer is used only if it passes the
// output schema; otherwise the heuristic runs and the output says why.
//
// Input (schema agent.query_enhancement.input): {"query"?: string,
// "max_variants"?: 1..5}. Without query the workflow's query is used. A
// bad input fails with agents.ErrPermanent naming the JSON pointer.
//
// Output (schema agent.query_enhancement.output), stable for the search
// agent, which reads it with agentkit.Dependency into an Output:
//
//	{
//	  "query": "How do I speed up postgres queries?",   // blanks collapsed
//	  "method": "heuristic" | "llm",
//	  "fallback_reason": "…",                          // only when the LLM failed
//	  "keywords": ["speed up", "postgres", "queries"], // lower case, no stop words
//	  "expansions": ["accelerate", "postgresql", "query", "request"],
//	  "synonyms": {"postgres": ["postgresql"], "speed up": ["accelerate"], …},
//	  "variants": [
//	    "How do I speed up postgres queries?",  // always the original, first
//	    "speed up postgres queries",            // keyword form
//	    "accelerate postgresql query",          // synonym-substituted form
//	    "steps to speed up postgres queries"    // statement form of a question
//	  ]                                         // then an entity-focused form, up to 5
//	}
//
// Variants are meant to be searched in parallel and fused (RRF); no two
// are equal ignoring case and blanks, so a query with nothing to rephrase
// has the original alone. Expansions never repeat a query term. All terms
// and every variant but the original are lower case.
//
// An *Agent is safe for concurrent use.
package enhance
