package profiles_test

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
	"github.com/agentbus/agentbus/agents/profiles"
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

func newAgent(t *testing.T, c *llm.Chat) *profiles.Agent {
	t.Helper()
	var cfg profiles.Config
	if c != nil {
		cfg.LLM = c
	}
	a, err := profiles.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func run(t *testing.T, a *profiles.Agent, input, workflowQuery string) (profiles.Output, *recorder) {
	t.Helper()
	rec := &recorder{}
	raw, err := a.Handle(t.Context(), agents.Request{StepID: "profile_selection", Query: workflowQuery, Input: json.RawMessage(input)}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(profiles.OutputSchema, raw); err != nil {
		t.Fatal(err)
	}
	var out profiles.Output
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out, rec
}

func choiceNames(cs []profiles.Choice) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestSelect(t *testing.T) {
	tests := []struct {
		query, intent, modality, level string
		available                      []string
		ensemble                       bool // requested
		selected, alternatives         []string
		wantEnsemble                   bool
	}{
		{query: `"connection refused" in redis`, intent: "troubleshooting", modality: "text", level: "simple",
			selected: []string{"bm25"}, alternatives: []string{"vector"}},
		{query: "What is retrieval augmented generation?", intent: "definition", modality: "text", level: "simple",
			selected: []string{"vector"}, alternatives: []string{"bm25"}},
		{query: "kubernetes", intent: "informational", modality: "text", level: "simple",
			selected: []string{"bm25"}, alternatives: []string{"vector"}},
		{query: "fix panic: runtime error in handleRequest() main.go", intent: "troubleshooting", modality: "code", level: "simple",
			selected: []string{"bm25"}, alternatives: []string{"vector"}},
		{query: "summarize the latest news on climate policy", intent: "summary", modality: "text", level: "simple",
			selected: []string{"vector"}, alternatives: []string{"bm25"}},
		{query: "github.com login", intent: "navigational", modality: "text", level: "simple",
			selected: []string{"bm25"}, alternatives: []string{"vector"}},
		{query: "how many users signed up in 2023", intent: "informational", modality: "data", level: "simple",
			selected: []string{"vector"}, alternatives: []string{"bm25"}},
		// Complex: an ensemble.
		{query: "how does raft elect a leader and why is it safe", intent: "informational", modality: "text", level: "complex",
			selected: []string{"vector", "bm25"}, alternatives: []string{}, wantEnsemble: true},
		{query: "compare NATS and Kafka", intent: "comparison", modality: "text", level: "complex",
			selected: []string{"bm25", "vector"}, alternatives: []string{}, wantEnsemble: true},
		// Mixed signals: exact error text in a natural question.
		{query: `how do I fix "connection refused" in my redis client?`, intent: "troubleshooting", modality: "text", level: "simple",
			selected: []string{"vector", "bm25"}, alternatives: []string{}, wantEnsemble: true},
		// Requested.
		{query: "kubernetes", intent: "informational", modality: "text", level: "simple", ensemble: true,
			selected: []string{"bm25", "vector"}, alternatives: []string{}, wantEnsemble: true},
		// Only available profiles; names say their family.
		{query: "kubernetes", intent: "informational", modality: "text", level: "simple",
			available: []string{"semantic_v2", "news", "keyword"},
			selected:  []string{"keyword"}, alternatives: []string{"news", "semantic_v2"}},
		{query: "compare NATS and Kafka", intent: "comparison", modality: "text", level: "complex",
			available: []string{"vector"}, selected: []string{"vector"}, alternatives: []string{}},
		// An ensemble leaves out profiles below 0.25 (but always takes two).
		{query: "kubernetes", intent: "informational", modality: "text", level: "simple", ensemble: true,
			available: []string{"bm25", "vector", "hybrid", "news"},
			selected:  []string{"bm25", "hybrid", "news"}, alternatives: []string{"vector"}, wantEnsemble: true},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			out := profiles.Select(tt.query, tt.available, tt.ensemble)
			if out.Intent != tt.intent || out.Modality != tt.modality || out.Complexity.Level != tt.level {
				t.Errorf("intent/modality/level = %s/%s/%s, want %s/%s/%s (%s)", out.Intent, out.Modality, out.Complexity.Level,
					tt.intent, tt.modality, tt.level, out.Reasoning)
			}
			if (out.Complexity.Score >= 0.5) != (tt.level == "complex") {
				t.Errorf("score %.2f disagrees with level %s", out.Complexity.Score, out.Complexity.Level)
			}
			if got := choiceNames(out.Selected); !slices.Equal(got, tt.selected) {
				t.Errorf("selected = %q, want %q (%s)", got, tt.selected, out.Reasoning)
			}
			if got := choiceNames(out.Alternatives); !slices.Equal(got, tt.alternatives) {
				t.Errorf("alternatives = %q, want %q", got, tt.alternatives)
			}
			if out.Ensemble != tt.wantEnsemble {
				t.Errorf("ensemble = %t, want %t (%s)", out.Ensemble, tt.wantEnsemble, out.Reasoning)
			}
		})
	}
}

func TestHandleHeuristic(t *testing.T) {
	out, rec := run(t, newAgent(t, nil), `{"profiles":["bm25","vector"],"ensemble":true}`, "error E1234 in billing")
	if out.Method != "heuristic" || out.Query != "error E1234 in billing" || !out.Ensemble || len(out.Selected) != 2 {
		t.Fatalf("out = %+v", out)
	}
	if out.Selected[0].Name != "bm25" || !strings.Contains(out.Reasoning, "ensemble requested") {
		t.Fatalf("out = %+v", out)
	}
	if !rec.said("selecting search profiles among bm25, vector") {
		t.Fatalf("progress = %q", rec.messages)
	}
}

func TestHandleBadInput(t *testing.T) {
	a := newAgent(t, nil)
	tests := []struct{ name, input, query, says string }{
		{"query not a string", `{"query":5}`, "q", "/query"},
		{"profile not a string", `{"profiles":["bm25",1]}`, "q", "/profiles/1"},
		{"duplicate profiles", `{"profiles":["bm25","bm25"]}`, "q", "/profiles"},
		{"ensemble not a bool", `{"ensemble":"yes"}`, "q", "/ensemble"},
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

const goodAnswer = `{"intent":"troubleshooting","modality":"code","complexity":{"level":"simple","score":0.2},
	"signals":{"lexical":0.8,"semantic":0.3},"selected":[{"name":"bm25","confidence":0.8}],
	"alternatives":[{"name":"vector","confidence":0.3}],"ensemble":false,"reasoning":"exact error code"}`

func TestHandleLLM(t *testing.T) {
	c, prompts := chatServer(t, 200, goodAnswer)
	a := newAgent(t, c)
	out, rec := run(t, a, `{"query":"error E1234"}`, "")
	if out.Method != "llm" || out.FallbackReason != "" || out.Intent != "troubleshooting" || out.Reasoning != "exact error code" {
		t.Fatalf("out = %+v", out)
	}
	if rec.said("heuristic") || len(*prompts) != 1 || !strings.Contains((*prompts)[0], `"alternatives"`) {
		t.Fatalf("progress %q, prompts %q", rec.messages, *prompts)
	}
	// A requested ensemble survives a model that did not want one.
	out, _ = run(t, a, `{"query":"error E1234","ensemble":true}`, "")
	if out.Method != "llm" || !out.Ensemble || !slices.Equal(choiceNames(out.Selected), []string{"bm25", "vector"}) {
		t.Fatalf("out = %+v", out)
	}
}

func TestHandleLLMFallsBack(t *testing.T) {
	tests := []struct {
		name, content, says string
		status              int
	}{
		{"server error", "model crashed", "500", 500},
		{"not JSON", "use bm25", "not a JSON object", 200},
		{"schema-invalid", strings.Replace(goodAnswer, `"confidence":0.8`, `"confidence":"high"`, 1), "/selected/0/confidence", 200},
		{"nothing selected", strings.Replace(goodAnswer, `[{"name":"bm25","confidence":0.8}]`, `[]`, 1), "/selected", 200},
		{"unavailable profile", strings.Replace(goodAnswer, `"name":"bm25"`, `"name":"splade"`, 1), `"splade"`, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := chatServer(t, tt.status, tt.content)
			out, rec := run(t, newAgent(t, c), `{"query":"error E1234"}`, "")
			if out.Method != "heuristic" || !strings.Contains(out.FallbackReason, tt.says) {
				t.Fatalf("method %q, fallback_reason %q, want heuristic naming %q", out.Method, out.FallbackReason, tt.says)
			}
			if !slices.Equal(choiceNames(out.Selected), []string{"bm25"}) {
				t.Fatalf("heuristic selected %+v", out.Selected)
			}
			if !rec.said("used the heuristic") {
				t.Fatalf("progress = %q, want a fallback message", rec.messages)
			}
		})
	}
}
