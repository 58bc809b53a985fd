package enhance_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/enhance"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/schemas"
)

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

func newAgent(t *testing.T, c *llm.Chat) *enhance.Agent {
	t.Helper()
	var cfg enhance.Config
	if c != nil {
		cfg.LLM = c
	}
	a, err := enhance.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func run(t *testing.T, a *enhance.Agent, input, workflowQuery string) (enhance.Output, *recorder) {
	t.Helper()
	rec := &recorder{}
	raw, err := a.Handle(t.Context(), agents.Request{StepID: "query_enhancement", Query: workflowQuery, Input: json.RawMessage(input)}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(enhance.OutputSchema, raw); err != nil {
		t.Fatal(err)
	}
	var out enhance.Output
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out, rec
}

func TestEnhance(t *testing.T) {
	tests := []struct {
		query                string
		keywords, expansions []string
		synonyms             map[string][]string
		variants             []string
	}{
		{
			query:      "How do I speed up postgres queries?",
			keywords:   []string{"speed up", "postgres", "queries"},
			expansions: []string{"accelerate", "postgresql", "query", "request"},
			synonyms:   map[string][]string{"speed up": {"accelerate"}, "postgres": {"postgresql"}, "queries": {"query", "request"}},
			variants: []string{
				"How do I speed up postgres queries?", // original
				"speed up postgres queries",           // keywords
				"accelerate postgresql query",         // synonyms
				"steps to speed up postgres queries",  // statement
			},
		},
		{
			query:      "What is a vector database",
			keywords:   []string{"vector", "database"},
			expansions: []string{"embedding", "similarity", "db", "datastore", "sql", "index"},
			synonyms:   map[string][]string{"database": {"db", "datastore"}},
			variants:   []string{"What is a vector database", "vector database", "vector db", "vector database is"},
		},
		{
			query:      `error "connection refused" in Redis 7`,
			keywords:   []string{"error", "connection", "refused", "redis", "7"},
			expansions: []string{"failure", "fault", "exception", "troubleshooting"},
			synonyms:   map[string][]string{"error": {"failure", "fault", "exception"}},
			variants: []string{`error "connection refused" in Redis 7`, "error connection refused redis 7",
				"failure connection refused redis 7", `"connection refused" redis 7`},
		},
		{
			// Nothing to rephrase but the stop words: the original alone.
			query:      "the",
			keywords:   []string{},
			expansions: []string{},
			synonyms:   map[string][]string{},
			variants:   []string{"the"},
		},
		{
			// Variants equal ignoring case collapse into the first.
			query:      "Tokyo",
			keywords:   []string{"tokyo"},
			expansions: []string{},
			synonyms:   map[string][]string{},
			variants:   []string{"Tokyo"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			out := enhance.Enhance(tt.query, 0)
			if !slices.Equal(out.Keywords, tt.keywords) {
				t.Errorf("keywords = %q, want %q", out.Keywords, tt.keywords)
			}
			if !slices.Equal(out.Expansions, tt.expansions) {
				t.Errorf("expansions = %q, want %q", out.Expansions, tt.expansions)
			}
			if len(out.Synonyms) != len(tt.synonyms) {
				t.Errorf("synonyms = %q, want %q", out.Synonyms, tt.synonyms)
			}
			for k, v := range tt.synonyms {
				if !slices.Equal(out.Synonyms[k], v) {
					t.Errorf("synonyms[%q] = %q, want %q", k, out.Synonyms[k], v)
				}
			}
			if !slices.Equal(out.Variants, tt.variants) {
				t.Errorf("variants = %q, want %q", out.Variants, tt.variants)
			}
		})
	}
}

func TestEnhanceMaxVariants(t *testing.T) {
	for max, want := range map[int]int{1: 1, 2: 2, 3: 3, 0: 4, 9: 4} {
		if got := len(enhance.Enhance("How do I speed up postgres queries?", max).Variants); got != want {
			t.Errorf("max %d: %d variants, want %d", max, got, want)
		}
	}
}

func TestHandleHeuristic(t *testing.T) {
	out, rec := run(t, newAgent(t, nil), `{"max_variants":2}`, "cheap flights to Tokyo")
	if out.Method != "heuristic" || out.Query != "cheap flights to Tokyo" ||
		!slices.Equal(out.Variants, []string{"cheap flights to Tokyo", "cheap flights tokyo"}) {
		t.Fatalf("out = %+v", out)
	}
	if !rec.said("enhancing query") {
		t.Fatalf("progress = %q", rec.messages)
	}
}

func TestHandleBadInput(t *testing.T) {
	a := newAgent(t, nil)
	tests := []struct{ name, input, query, says string }{
		{"query not a string", `{"query":5}`, "q", "/query"},
		{"too many variants", `{"max_variants":6}`, "q", "/max_variants"},
		{"no query anywhere", `{}`, " ", "no query"},
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
	c, prompts := chatServer(t, 200, `{"keywords":["postgres","slow"],"expansions":["index tuning"],"synonyms":{"slow":["sluggish"]},
		"variants":["postgres slow queries","POSTGRES SLOW QUERIES","explain analyze postgres"]}`)
	out, rec := run(t, newAgent(t, c), `{"query":"why is postgres slow"}`, "")
	if out.Method != "llm" || out.FallbackReason != "" {
		t.Fatalf("method %q reason %q", out.Method, out.FallbackReason)
	}
	want := []string{"why is postgres slow", "postgres slow queries", "explain analyze postgres"}
	if !slices.Equal(out.Variants, want) {
		t.Fatalf("variants = %q, want %q (original first, repeats dropped)", out.Variants, want)
	}
	if len(*prompts) != 1 || !strings.Contains((*prompts)[0], `"variants"`) {
		t.Fatalf("system prompt lacks the schema: %q", *prompts)
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
		{"not JSON", "here you go: postgres", "not a JSON object", 200},
		{"schema-invalid", `{"keywords":"postgres","expansions":[],"synonyms":{},"variants":["a"]}`, "/keywords", 200},
		{"only the original", `{"keywords":[],"expansions":[],"synonyms":{},"variants":["Why is postgres slow"]}`, "no variant besides", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := chatServer(t, tt.status, tt.content)
			out, rec := run(t, newAgent(t, c), `{"query":"why is postgres slow"}`, "")
			if out.Method != "heuristic" || !strings.Contains(out.FallbackReason, tt.says) {
				t.Fatalf("method %q, fallback_reason %q, want heuristic naming %q", out.Method, out.FallbackReason, tt.says)
			}
			if !slices.Equal(out.Variants, []string{"why is postgres slow", "postgres slow", "postgresql sluggish", "postgres slow because"}) {
				t.Fatalf("heuristic variants = %q", out.Variants)
			}
			if !rec.said("used the heuristic") {
				t.Fatalf("progress = %q, want a fallback message", rec.messages)
			}
		})
	}
}
