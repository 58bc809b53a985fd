// Package routing is the built-in routing agent (capability "routing"):
// it recommends which agents, named by capability, should handle a query.
// The offline heuristic combines keyword and intent rules (summarize,
// compare, remember, extract, rephrase, …) with the similarity of the
// query to each capability's description, embedded by Config.Embedder
// (default llm.LocalEmbedder; description vectors are cached). When
// Config.LLM is set it is asked first and its answer is used only if it
// passes the output schema and names only available capabilities;
// otherwise the heuristic runs and the output says why.
//
// Input (schema agent.routing.input): {"query"?: string, "capabilities"?:
// [capability names] (default DefaultCapabilities: entity_extraction,
// query_enhancement, profile_selection, search, summarize,
// detailed_report, memory, echo), "descriptions"?: {capability: text}}
// for capabilities Builtin does not describe. Without query the
// workflow's query is used. A bad input fails with agents.ErrPermanent
// naming the JSON pointer.
//
// Output (schema agent.routing.output):
//
//	{
//	  "query": "summarize last week's incident reports",
//	  "method": "heuristic" | "llm",
//	  "fallback_reason": "…",     // only when the LLM failed
//	  "recommended_agents": [{"capability": "summarize", "confidence": 0.7,
//	                          "reason": "keywords \"summarize\", similarity 0.20"}],
//	  "confidence": 0.7,          // the first recommendation's
//	  "reasoning": "recommended summarize 0.70 (…); fallbacks search, entity_extraction",
//	  "fallbacks": ["search", "entity_extraction"],
//	  "embedder": "local-hash-256" // heuristic only
//	}
//
// A capability's confidence is 0.6 for a keyword rule match (plus 0.1 per
// further keyword, at most 0.9) plus half the cosine similarity, capped at
// 1. Up to three capabilities of confidence ≥ 0.2 are recommended, the
// best always; when nothing reaches 0.2, search is (if available). search
// is the first fallback whenever it is available and not recommended;
// then the best of the rest, two fallbacks at most. Every capability
// named is one of the available ones.
//
// An *Agent is safe for concurrent use.
package routing
