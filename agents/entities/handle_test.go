package entities_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/entities"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/schemas"
)

var now = time.Date(2024, 6, 12, 15, 4, 5, 0, time.UTC)

// recorder is an Emitter that keeps what it is given.
type recorder struct {
	mu       sync.Mutex
	messages []string
}

func (r *recorder) Progress(_ context.Context, percent float64, message string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if percent < 0 || percent > 100 {
		return errors.New("percent out of range")
	}
	r.messages = append(r.messages, message)
	return nil
}

func (r *recorder) Artifact(context.Context, string, string, any, bool, bool) error { return nil }

func (r *recorder) said(sub string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.messages {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

// chatServer speaks the OpenAI chat-completions protocol and answers every
// request with status and content; it records the system prompts.
func chatServer(t *testing.T, status int, content string) (*llm.Chat, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var prompts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if len(req.Messages) > 0 {
			mu.Lock()
			prompts = append(prompts, req.Messages[0].Content)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status >= 400 {
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": content}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
		})
	}))
	t.Cleanup(srv.Close)
	c, err := llm.NewChat(llm.ChatConfig{URL: srv.URL + "/v1", Model: "m", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c, &prompts
}

func newAgent(t *testing.T, c *llm.Chat) *entities.Agent {
	t.Helper()
	cfg := entities.Config{Now: func() time.Time { return now }}
	if c != nil {
		cfg.LLM = c
	}
	a, err := entities.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func run(t *testing.T, a *entities.Agent, input, workflowQuery string) (entities.Output, *recorder) {
	t.Helper()
	rec := &recorder{}
	raw, err := a.Handle(t.Context(), agents.Request{StepID: "entity_extraction", Query: workflowQuery, Input: json.RawMessage(input)}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(entities.OutputSchema, raw); err != nil {
		t.Fatal(err)
	}
	var out entities.Output
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out, rec
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
	if !rec.said("extracting entities") {
		t.Fatalf("progress = %q", rec.messages)
	}
	// Without a query in the input, the workflow's query; an input "now"
	// wins over the clock.
	out, _ = run(t, a, `{"now":"2020-02-10T00:00:00Z"}`, "Tokyo yesterday")
	if out.Query != "Tokyo yesterday" || len(out.TimeRanges) != 1 || out.TimeRanges[0].From.Format(time.DateOnly) != "2020-02-09" {
		t.Fatalf("out = %+v", out)
	}
}

func TestHandleBadInput(t *testing.T) {
	a := newAgent(t, nil)
	tests := []struct{ name, input, query, says string }{
		{"query not a string", `{"query":5}`, "q", "/query"},
		{"unknown field", `{"query":"q","k":1}`, "q", "/k"},
		{"empty query", `{"query":""}`, "q", "/query"},
		{"no query anywhere", `{}`, "", "no query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Handle(t.Context(), agents.Request{StepID: "s", Query: tt.query, Input: json.RawMessage(tt.input)}, &recorder{})
			if !errors.Is(err, agents.ErrPermanent) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("err = %v, want ErrPermanent naming %q", err, tt.says)
			}
		})
	}
}

func TestHandleLLM(t *testing.T) {
	answer := `{"entities":[{"text":"Ada Lovelace","type":"person","confidence":0.97,"context":"Ada Lovelace notes","start":0,"end":12},
		{"text":"notes","type":"CONCEPT","confidence":0.4,"context":"Ada Lovelace notes","start":99,"end":104}],
		"time_ranges":[{"text":"1843","from":"1843-01-01T00:00:00Z","to":"1843-12-31T23:59:59Z","grain":"year"}]}`
	c, prompts := chatServer(t, 200, answer)
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
	if len(*prompts) != 1 || !strings.Contains((*prompts)[0], "2024-06-12T15:04:05Z") || !strings.Contains((*prompts)[0], `"time_ranges"`) {
		t.Fatalf("system prompt lacks now or the schema: %q", *prompts)
	}
	if rec.said("heuristic") {
		t.Fatalf("progress says fallback: %q", rec.messages)
	}
}

func TestHandleLLMFallsBack(t *testing.T) {
	tests := []struct {
		name, content, says string
		status              int
	}{
		{"server error", "model crashed", "500", 500},
		{"not JSON", "Sure! Here are the entities: Ada", "not a JSON object", 200},
		{"schema-invalid", `{"entities":[{"text":"Ada","type":"PERSON","confidence":7,"context":"","start":0,"end":3}],"time_ranges":[]}`, "/entities/0/confidence", 200},
		{"missing field", `{"entities":[]}`, "/time_ranges", 200},
		{"invented entity", `{"entities":[{"text":"Babbage","type":"PERSON","confidence":0.5,"context":"","start":0,"end":7}],"time_ranges":[]}`, "not in the query", 200},
		{"backwards range", `{"entities":[],"time_ranges":[{"text":"x","from":"2024-02-01T00:00:00Z","to":"2024-01-01T00:00:00Z","grain":"day"}]}`, "ends before it starts", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := chatServer(t, tt.status, tt.content)
			out, rec := run(t, newAgent(t, c), `{"query":"Ada Lovelace in Paris"}`, "")
			if out.Method != "heuristic" || !strings.Contains(out.FallbackReason, tt.says) {
				t.Fatalf("method %q, fallback_reason %q, want heuristic naming %q", out.Method, out.FallbackReason, tt.says)
			}
			if len(out.Entities) != 2 || out.Entities[0].Text != "Ada Lovelace" {
				t.Fatalf("heuristic entities = %+v", out.Entities)
			}
			if !rec.said("used the heuristic") {
				t.Fatalf("progress = %q, want a fallback message", rec.messages)
			}
		})
	}
}

func TestCard(t *testing.T) {
	c := newAgent(t, nil).Card()
	if len(c.Capabilities) != 1 || c.Capabilities[0] != entities.Capability || c.Description == "" || len(c.Examples) == 0 {
		t.Fatalf("card = %+v", c)
	}
}
