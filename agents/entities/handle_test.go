package entities_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/entities"
	"github.com/agentbus/agentbus/llm"
)

var now = time.Date(2024, 6, 12, 15, 4, 5, 0, time.UTC)

// newAgent makes an agent; c nil means no LLM.
func newAgent(t *testing.T, c agentkit.Completer) *entities.Agent {
	t.Helper()
	return kittest.New(t, entities.New, entities.Config{LLM: c, Now: func() time.Time { return now }})
}

func run(t *testing.T, a *entities.Agent, input, workflowQuery string) (entities.Output, *kittest.Recorder) {
	t.Helper()
	return kittest.Run[entities.Output](t, a, entities.OutputSchema, kittest.Step("entity_extraction", input, workflowQuery))
}

func TestHandleHeuristic(t *testing.T) {
	a := newAgent(t, nil)
	out, rec := run(t, a, `{"query":"OpenAI in London last month"}`, "ignored")
	if out.Method != "heuristic" || out.FallbackReason != "" || out.Query != "OpenAI in London last month" {
		t.Fatalf("out = %+v", out)
	}
	if len(out.Entities) != 3 || out.Filters == nil || out.Filters.From.Format(time.DateOnly) != "2024-05-01" {
		t.Fatalf("out = %+v", out)
	}
	if !rec.Said("extracting entities") {
		t.Fatalf("progress = %q", rec.Messages())
	}
	// Without a query in the input, the workflow's query; an input "now"
	// wins over the clock.
	out, _ = run(t, a, `{"now":"2020-02-10T00:00:00Z"}`, "Tokyo yesterday")
	if out.Query != "Tokyo yesterday" || len(out.TimeRanges) != 1 || out.TimeRanges[0].From.Format(time.DateOnly) != "2020-02-09" {
		t.Fatalf("out = %+v", out)
	}
}

func TestHandleBadInput(t *testing.T) {
	kittest.CheckBadInputs(t, newAgent(t, nil), []kittest.BadInput{
		{Name: "query not a string", Input: `{"query":5}`, Query: "q", Says: "/query"},
		{Name: "unknown field", Input: `{"query":"q","k":1}`, Query: "q", Says: "/k"},
		{Name: "empty query", Input: `{"query":""}`, Query: "q", Says: "/query"},
		{Name: "no query anywhere", Input: `{}`, Query: "", Says: "no query"},
	})
}

func TestHandleLLM(t *testing.T) {
	answer := `{"entities":[{"text":"Ada Lovelace","type":"person","confidence":0.97,"context":"Ada Lovelace notes","start":0,"end":12},
		{"text":"notes","type":"CONCEPT","confidence":0.4,"context":"Ada Lovelace notes","start":99,"end":104}],
		"time_ranges":[{"text":"1843","from":"1843-01-01T00:00:00Z","to":"1843-12-31T23:59:59Z","grain":"year"}]}`
	c, srv := kittest.Chat(t, 200, answer)
	out, rec := run(t, newAgent(t, c), `{"query":"Ada Lovelace notes 1843"}`, "")
	if out.Method != "llm" || out.FallbackReason != "" {
		t.Fatalf("method %q reason %q", out.Method, out.FallbackReason)
	}
	if len(out.Entities) != 2 || out.Entities[0].Type != "PERSON" || out.Entities[1].Start != 13 || out.Entities[1].End != 18 {
		t.Fatalf("entities = %+v (types upper-cased, offsets found)", out.Entities)
	}
	if out.Filters == nil || out.Filters.From.Year() != 1843 || len(out.DominantTypes) != 2 || out.DominantTypes[0] != "PERSON" {
		t.Fatalf("derived fields: %+v %v", out.Filters, out.DominantTypes)
	}
	if len(srv.Systems()) != 1 || !strings.Contains(srv.Systems()[0], "2024-06-12T15:04:05Z") || !strings.Contains(srv.Systems()[0], `"time_ranges"`) {
		t.Fatalf("system prompt lacks now or the schema: %q", srv.Systems())
	}
	if rec.Said("heuristic") {
		t.Fatalf("progress says fallback: %q", rec.Messages())
	}
}

func TestHandleLLMFallsBack(t *testing.T) {
	cases := []kittest.Fallback{
		{Name: "server error", Content: "model crashed", Says: "500", Status: 500},
		{Name: "not JSON", Content: "Sure! Here are the entities: Ada", Says: "not a JSON object", Status: 200},
		{Name: "schema-invalid", Content: `{"entities":[{"text":"Ada","type":"PERSON","confidence":7,"context":"","start":0,"end":3}],"time_ranges":[]}`, Says: "/entities/0/confidence", Status: 200},
		{Name: "missing field", Content: `{"entities":[]}`, Says: "/time_ranges", Status: 200},
		{Name: "invented entity", Content: `{"entities":[{"text":"Babbage","type":"PERSON","confidence":0.5,"context":"","start":0,"end":7}],"time_ranges":[]}`, Says: "not in the query", Status: 200},
		{Name: "backwards range", Content: `{"entities":[],"time_ranges":[{"text":"x","from":"2024-02-01T00:00:00Z","to":"2024-01-01T00:00:00Z","grain":"day"}]}`, Says: "ends before it starts", Status: 200},
	}
	kittest.CheckFallbacks(t, cases, func(t *testing.T, c *llm.Chat) (string, string, *kittest.Recorder) {
		out, rec := run(t, newAgent(t, c), `{"query":"Ada Lovelace in Paris"}`, "")
		if len(out.Entities) != 2 || out.Entities[0].Text != "Ada Lovelace" {
			t.Fatalf("heuristic entities = %+v", out.Entities)
		}
		return out.Method, out.FallbackReason, rec
	})
}

func TestCard(t *testing.T) {
	c := newAgent(t, nil).Card()
	if len(c.Capabilities) != 1 || c.Capabilities[0] != entities.Capability || c.Description == "" || len(c.Examples) == 0 {
		t.Fatalf("card = %+v", c)
	}
}
