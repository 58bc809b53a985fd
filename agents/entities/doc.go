// Package entities is the built-in entity extraction agent (capability
// "entity_extraction"), one of the planning agents that run before search.
// It finds named entities and time expressions in a query, with a
// deterministic offline heuristic (embedded gazetteers, capitalised-name
// and suffix rules, date and number patterns) or, when Config.LLM is set,
// an LLM whose answer is used only if it passes the output schema and
// sanity checks; otherwise the heuristic runs and the output says why.
//
// Input (schema agent.entity_extraction.input): {"query"?: string,
// "now"?: RFC 3339}. Without query the workflow's query is used; without
// now, Config.Now. A bad input fails with agents.ErrPermanent naming the
// JSON pointer.
//
// Output (schema agent.entity_extraction.output), stable for the search
// agent, which reads it with agentkit.Dependency into an Output:
//
//	{
//	  "query": "OpenAI news from San Francisco last week",
//	  "method": "heuristic" | "llm",
//	  "fallback_reason": "…",            // only when the LLM failed
//	  "reference_time": "2024-06-12T15:04:05Z",
//	  "entities": [{"text": "San Francisco", "type": "PLACE", "confidence": 0.9,
//	                "context": "OpenAI news from San Francisco last week",
//	                "start": 17, "end": 30}],        // byte offsets, query[start:end] == text
//	  "dominant_types": ["DATE", "ORG", "PLACE"],   // by summed confidence, then name
//	  "time_ranges": [{"text": "last week", "from": "2024-06-03T00:00:00Z",
//	                   "to": "2024-06-09T23:59:59Z", "grain": "week"}],
//	  "filters": {"from": "2024-06-03T00:00:00Z", "to": "2024-06-09T23:59:59Z"}
//	}
//
// Types are PERSON, PLACE, ORG, CONCEPT, DATE, PRODUCT, EVENT and NUMBER
// (an LLM may add others, always upper case). Time ranges are inclusive:
// from is the first second, to the last second of the period, in the
// reference time's location. Calendar words name whole periods ("this
// month" is the whole month, weeks start on Monday); "since …" and
// "past N days|weeks|months|years" end at the end of today, and "past 3
// days" is today and the two days before. A month without a year is the
// latest such month that has begun. filters spans every range (earliest
// from, latest to) and is absent when there is none; it decodes directly
// into retrieval.Filters.
//
// An *Agent is safe for concurrent use.
package entities
