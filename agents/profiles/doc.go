// Package profiles is the built-in profile selection agent (capability
// "profile_selection"), one of the planning agents that run before search.
// It classifies a query — intent, modality, complexity — weighs the
// evidence for lexical and for semantic retrieval, and chooses among the
// search profiles the backend offers, with a deterministic offline
// heuristic or, when Config.LLM is set, an LLM whose answer is used only
// if it passes the output schema and names only available profiles;
// otherwise the heuristic runs and the output says why.
//
// Input (schema agent.profile_selection.input): {"query"?: string,
// "profiles"?: [string] (default ["bm25", "vector"]), "ensemble"?: bool}.
// Without query the workflow's query is used. A bad input fails with
// agents.ErrPermanent naming the JSON pointer.
//
// Output (schema agent.profile_selection.output), stable for the search
// agent, which reads it with agentkit.Dependency into an Output:
//
//	{
//	  "query": "how does raft elect a leader and why is it safe",
//	  "method": "heuristic" | "llm",
//	  "fallback_reason": "…",     // only when the LLM failed
//	  "intent": "informational",  // troubleshooting, comparison, summary, how-to, definition,
//	                              // navigational, recommendation, informational
//	  "modality": "text",         // code, image, data, text
//	  "complexity": {"level": "complex", "score": 0.72, "reasons": ["why/how with 2 clauses"]},
//	  "signals": {"lexical": 0.1, "semantic": 0.9},
//	  "selected": [{"name": "vector", "confidence": 0.9}, {"name": "bm25", "confidence": 0.1}],
//	  "alternatives": [],
//	  "ensemble": true,
//	  "reasoning": "intent informational, modality text, complex (score 0.72); …"
//	}
//
// selected is never empty and, with alternatives, holds only profiles of
// the input, each once, best first. A profile's confidence is the
// lexical signal for lexical names (containing bm25, lexical, keyword,
// text, sparse), the semantic signal for semantic ones (vector, semantic,
// dense, embed, knn), their mean plus 0.1 for hybrid, and 0.3 otherwise.
// ensemble is true when at least two profiles are available and the input
// asked for it, the query is complex (the orchestrator planner's rules;
// level is complex exactly when score ≥ 0.5), or both signals are at
// least 0.4; an ensemble selects the two best profiles and every other
// one of confidence ≥ 0.25. Without an ensemble only the best is selected.
//
// An *Agent is safe for concurrent use.
package profiles
