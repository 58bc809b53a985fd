package entities

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentbus/agentbus/agents/agentkit"
)

// systemPrompt asks for the output schema's shape; the schema itself is
// quoted so that the model and the validator agree.
func systemPrompt(now time.Time) string {
	return "You extract named entities and time expressions from a search query.\n" +
		"Entity types: PERSON, PLACE, ORG, CONCEPT, DATE, PRODUCT, EVENT, NUMBER.\n" +
		"start and end are byte offsets of the entity's text in the query; context is the entity with up to three words either side.\n" +
		"Resolve every time expression to inclusive RFC 3339 date-times (from, to) relative to now = " + now.Format(time.RFC3339) +
		", with grain day, week, month, quarter or year.\n" +
		agentkit.SchemaPrompt(OutputSchema, "method", "query", "reference_time", "dominant_types", "filters")
}

// parseLLM turns the model's answer into an Output, or says why it cannot:
// the answer must satisfy the output schema, every entity must be found in
// the query, every range must run forwards. Fields the agent derives
// itself (method, query, reference time, dominant types, filters) are
// overwritten.
func parseLLM(query string, now time.Time, answer string) (Output, error) {
	var out Output
	if err := agentkit.ParseLLM(answer, agentkit.Answer{Agent: "entities", Schema: OutputSchema, Query: query, Set: map[string]any{"reference_time": now.Format(time.RFC3339Nano), "dominant_types": []any{}, "filters": nil}}, &out); err != nil {
		return Output{}, err
	}
	for i := range out.Entities {
		e := &out.Entities[i]
		e.Type = strings.ToUpper(e.Type)
		if e.Start < 0 || e.End > len(query) || e.Start >= e.End || query[e.Start:e.End] != e.Text {
			// Models count characters, not bytes, or not at all: trust
			// the text and find it.
			at := strings.Index(query, e.Text)
			if at < 0 {
				return Output{}, fmt.Errorf("entities: answer's /entities/%d text %q is not in the query", i, e.Text)
			}
			e.Start, e.End = at, at+len(e.Text)
		}
	}
	for i, r := range out.TimeRanges {
		if r.To.Before(r.From) {
			return Output{}, fmt.Errorf("entities: answer's /time_ranges/%d ends before it starts", i)
		}
	}
	out.ReferenceTime = now
	finish(&out)
	return out, nil
}
