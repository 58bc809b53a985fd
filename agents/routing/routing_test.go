package routing_test

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
	"github.com/agentbus/agentbus/agents/routing"
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

func newAgent(t *testing.T, c *llm.Chat, e llm.Embedder) *routing.Agent {
	t.Helper()
	cfg := routing.Config{Embedder: e}
	if c != nil {
		cfg.LLM = c
	}
	a, err := routing.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func run(t *testing.T, a *routing.Agent, input, workflowQuery string) (routing.Output, *recorder) {
	t.Helper()
	rec := &recorder{}
	raw, err := a.Handle(t.Context(), agents.Request{StepID: "routing", Query: workflowQuery, Input: json.RawMessage(input)}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(routing.OutputSchema, raw); err != nil {
		t.Fatal(err)
	}
	var out routing.Output
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out, rec
}

func recommended(out routing.Output) []string {
	var s []string
	for _, r := range out.RecommendedAgents {
		s = append(s, r.Capability)
	}
	return s
}

func TestRoute(t *testing.T) {
	tests := []struct {
		query        string
		capabilities []string
		descriptions map[string]string
		want         []string // recommended, in order
		fallbacks    []string
	}{
		{query: "summarize last week's incident reports", want: []string{"summarize"}, fallbacks: []string{"search", "entity_extraction"}},
		{query: "compare raft and paxos in depth", want: []string{"detailed_report"}, fallbacks: []string{"search", "echo"}},
		{query: "what did we discuss last time", want: []string{"memory"}, fallbacks: []string{"search", "entity_extraction"}},
		{query: "extract the people and places in this text", want: []string{"entity_extraction"}, fallbacks: []string{"search", "echo"}},
		{query: "rephrase my query about kubernetes", want: []string{"query_enhancement"}, fallbacks: []string{"search", "profile_selection"}},
		{query: "what is the capital of France", want: []string{"search"}, fallbacks: []string{"entity_extraction", "echo"}},
		{query: "keyword or semantic search for error codes", want: []string{"search", "profile_selection"}, fallbacks: []string{"query_enhancement", "summarize"}},
		// Nothing matches: search, by default.
		{query: "zzz qqq", want: []string{"search"}, fallbacks: []string{"detailed_report", "echo"}},
		// Similarity alone finds a capability that has no keyword rule.
		{query: "translate this paragraph into German", capabilities: []string{"search", "summarize", "translate"},
			descriptions: map[string]string{"translate": "Translate a paragraph of text into another language such as French or German."},
			want:         []string{"translate"}, fallbacks: []string{"search", "summarize"}},
		// Only available capabilities, even when another would match.
		{query: "summarize the design doc", capabilities: []string{"search", "echo"}, want: []string{"search"}, fallbacks: []string{"echo"}},
	}
	a := newAgent(t, nil, nil)
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			out := a.Route(t.Context(), tt.query, tt.capabilities, tt.descriptions)
			if got := recommended(out); !slices.Equal(got, tt.want) {
				t.Errorf("recommended = %q, want %q (%s)", got, tt.want, out.Reasoning)
			}
			if !slices.Equal(out.Fallbacks, tt.fallbacks) {
				t.Errorf("fallbacks = %q, want %q", out.Fallbacks, tt.fallbacks)
			}
			if out.Confidence != out.RecommendedAgents[0].Confidence || out.Embedder != "local-hash-256" {
				t.Errorf("confidence %v, embedder %q", out.Confidence, out.Embedder)
			}
		})
	}
}

// countingEmbedder counts the texts it embeds.
type countingEmbedder struct {
	llm.LocalEmbedder
	mu sync.Mutex
	n  int
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	c.n += len(texts)
	c.mu.Unlock()
	return c.LocalEmbedder.Embed(ctx, texts)
}

func TestRouteCachesDescriptions(t *testing.T) {
	e := &countingEmbedder{}
	a := newAgent(t, nil, e)
	a.Route(t.Context(), "first", nil, nil)
	a.Route(t.Context(), "second", nil, nil)
	if want := len(routing.DefaultCapabilities) + 2; e.n != want {
		t.Fatalf("embedded %d texts, want %d (descriptions once, each query once)", e.n, want)
	}
}

// downEmbedder stands for an embeddings endpoint that is down.
type downEmbedder struct{}

func (downEmbedder) Name() string { return "down" }
func (downEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("embeddings endpoint unreachable")
}

func TestRouteWithoutSimilarity(t *testing.T) {
	out := newAgent(t, nil, downEmbedder{}).Route(t.Context(), "summarize this", nil, nil)
	if !slices.Equal(recommended(out), []string{"summarize"}) || out.Confidence != 0.6 ||
		!strings.Contains(out.Reasoning, "similarity unavailable (embeddings endpoint unreachable)") {
		t.Fatalf("out = %+v", out)
	}
}

func TestHandleHeuristic(t *testing.T) {
	out, rec := run(t, newAgent(t, nil, nil), `{"capabilities":["search","memory"]}`, "remind me what I said earlier")
	if out.Method != "heuristic" || !slices.Equal(recommended(out), []string{"memory"}) || !slices.Equal(out.Fallbacks, []string{"search"}) {
		t.Fatalf("out = %+v", out)
	}
	if !rec.said("routing among 2 capabilities") {
		t.Fatalf("progress = %q", rec.messages)
	}
}

func TestHandleBadInput(t *testing.T) {
	a := newAgent(t, nil, nil)
	tests := []struct{ name, input, query, says string }{
		{"query not a string", `{"query":5}`, "q", "/query"},
		{"bad capability name", `{"capabilities":["search","a.b"]}`, "q", "/capabilities/1"},
		{"description not a string", `{"descriptions":{"x":1}}`, "q", "/descriptions/x"},
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

const goodAnswer = `{"recommended_agents":[{"capability":"search","confidence":0.8,"reason":"needs documents"},
	{"capability":"summarize","confidence":0.6,"reason":"wants a summary"}],"confidence":0.8,
	"reasoning":"search then summarize","fallbacks":["detailed_report"]}`

func TestHandleLLM(t *testing.T) {
	c, prompts := chatServer(t, 200, goodAnswer)
	out, rec := run(t, newAgent(t, c, nil), `{"query":"summary of the raft paper"}`, "")
	if out.Method != "llm" || !slices.Equal(recommended(out), []string{"search", "summarize"}) || out.Reasoning != "search then summarize" {
		t.Fatalf("out = %+v", out)
	}
	if rec.said("heuristic") || len(*prompts) != 1 || !strings.Contains((*prompts)[0], `"recommended_agents"`) {
		t.Fatalf("progress %q, prompts %q", rec.messages, *prompts)
	}
}

func TestHandleLLMFallsBack(t *testing.T) {
	tests := []struct {
		name, content, says string
		status              int
	}{
		{"server error", "model crashed", "500", 500},
		{"not JSON", "search, then summarize", "not a JSON object", 200},
		{"schema-invalid", strings.Replace(goodAnswer, `"confidence":0.8,"reason"`, `"confidence":2,"reason"`, 1), "/recommended_agents/0/confidence", 200},
		{"unavailable capability", strings.Replace(goodAnswer, `"capability":"search"`, `"capability":"websearch"`, 1), `"websearch"`, 200},
		{"unavailable fallback", strings.Replace(goodAnswer, `"detailed_report"`, `"translate"`, 1), "/fallbacks/0", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := chatServer(t, tt.status, tt.content)
			out, rec := run(t, newAgent(t, c, nil), `{"query":"summary of the raft paper"}`, "")
			if out.Method != "heuristic" || !strings.Contains(out.FallbackReason, tt.says) {
				t.Fatalf("method %q, fallback_reason %q, want heuristic naming %q", out.Method, out.FallbackReason, tt.says)
			}
			if recommended(out)[0] != "summarize" {
				t.Fatalf("heuristic recommended %q", recommended(out))
			}
			if !rec.said("used the heuristic") {
				t.Fatalf("progress = %q, want a fallback message", rec.messages)
			}
		})
	}
}
