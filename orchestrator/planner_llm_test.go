package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/orchestrator"
)

// chatRequest is what the fake model reads from POST /v1/chat/completions.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

// fakeModel is a local HTTP server speaking the OpenAI chat-completions
// protocol. answer returns a status and the answer's content (the error
// message for a status >= 400); block makes it hold every request until
// the client gives up.
type fakeModel struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests []chatRequest
}

func newFakeModel(t *testing.T, block bool, answer func(r chatRequest) (int, string)) *fakeModel {
	t.Helper()
	f := &fakeModel{}
	release := make(chan struct{})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body) // so that a client hanging up is noticed
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.mu.Unlock()
		if block {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		status, content := answer(req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status >= 400 {
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": content, "type": "server_error"}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
		})
	}))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(release) }) // runs before Close
	return f
}

func (f *fakeModel) got() []chatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// chat is a client of the fake model with a short timeout.
func (f *fakeModel) chat(t *testing.T) *llm.Chat {
	t.Helper()
	c, err := llm.NewChat(llm.ChatConfig{URL: f.srv.URL + "/v1", Model: "test-model", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func answers(content string) func(chatRequest) (int, string) {
	return func(chatRequest) (int, string) { return http.StatusOK, content }
}

const twoEchoSteps = `{"steps":[{"id":"A","capability":"echo","input":{"query":"first"}},{"id":"B","capability":"echo","depends_on":["A"]}]}`

func TestLLMPlannerUsesAValidPlan(t *testing.T) {
	for name, content := range map[string]string{
		"plain":  twoEchoSteps,
		"fenced": "```json\n" + twoEchoSteps + "\n```",
		"prose":  "Here is the plan:\n" + twoEchoSteps + "\nGood luck.",
	} {
		t.Run(name, func(t *testing.T) {
			m := newFakeModel(t, false, answers(content))
			p := &orchestrator.LLMPlanner{Chat: m.chat(t)}
			agents := agentsFor("echo", "search")
			agents[1].Examples = []string{"find documents about raft"}
			plan, why, err := p.Plan(t.Context(), "say hello twice", agents)
			if err != nil {
				t.Fatal(err)
			}
			if got := shape(plan); !slices.Equal(got, []string{"A:echo", "B:echo<-A"}) {
				t.Fatalf("plan %v", got)
			}
			if in := inputOf(t, plan, "A"); in["query"] != "first" {
				t.Fatalf("A's input was changed: %v", in)
			}
			if in := inputOf(t, plan, "B"); in["query"] != "say hello twice" {
				t.Fatalf("B had no input and should get the query: %v", in)
			}
			if !strings.HasPrefix(why, "LLM planner (test-model at 127.0.0.1:") || !strings.HasSuffix(why, "): 2 steps: A → B") {
				t.Fatalf("explanation %q", why)
			}
			reqs := m.got()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := reqs[0]
			if r.Model != "test-model" || r.ResponseFormat == nil || r.ResponseFormat.Type != "json_object" ||
				len(r.Messages) != 2 || r.Messages[1].Role != "user" || r.Messages[1].Content != "say hello twice" {
				t.Fatalf("request %+v", r)
			}
			system := r.Messages[0].Content
			for _, s := range []string{"- echo (agent echo-agent): does echo", "- search (agent search-agent): does search Example queries: find documents about raft",
				`"depends_on"`, `"$id": "https://schemas.agentbus.invalid/plan.json"`} {
				if !strings.Contains(system, s) {
					t.Errorf("system prompt lacks %q:\n%s", s, system)
				}
			}
		})
	}
}

func TestLLMPlannerFallsBack(t *testing.T) {
	bad := map[string]struct {
		block   bool
		answer  func(chatRequest) (int, string)
		because string
	}{
		"invalid JSON":       {false, answers("Sure! Step one: search."), "the answer is not JSON"},
		"truncated JSON":     {false, answers(`{"steps":[{"id":"A",`), "the answer is not JSON"},
		"schema":             {false, answers(`{"steps":[{"id":"A"}],"why":"x"}`), "not a valid plan: /steps/0/capability: required property is missing; /why: property \"why\" is not allowed here"},
		"empty plan":         {false, answers(`{"steps":[]}`), "not a valid plan: /steps"},
		"cycle":              {false, answers(`{"steps":[{"id":"A","capability":"echo","depends_on":["B"]},{"id":"B","capability":"echo","depends_on":["A"]}]}`), "plan has a dependency cycle: A depends on B depends on A"},
		"unknown dependency": {false, answers(`{"steps":[{"id":"A","capability":"echo","depends_on":["Z"]}]}`), `step "A" depends on unknown step "Z"`},
		"unknown capability": {false, answers(`{"steps":[{"id":"A","capability":"teleport"}]}`), `capability "teleport", which no registered agent offers`},
		"unknown fallback":   {false, answers(`{"steps":[{"id":"A","capability":"echo","fallback":"teleport"}]}`), `falls back to capability "teleport"`},
		"server error":       {false, func(chatRequest) (int, string) { return 500, "model crashed" }, "chat endpoint answered 500 Internal Server Error: model crashed"},
		"timeout":            {true, nil, "chat endpoint did not answer within 300ms"},
	}
	for name, c := range bad {
		t.Run(name, func(t *testing.T) {
			m := newFakeModel(t, c.block, c.answer)
			p := &orchestrator.LLMPlanner{Chat: m.chat(t)}
			plan, why, err := p.Plan(t.Context(), "hello world", agentsFor("echo"))
			if err != nil {
				t.Fatal(err)
			}
			if got := shape(plan); !slices.Equal(got, []string{"echo:echo"}) {
				t.Fatalf("fallback plan %v, want the heuristic's echo step", got)
			}
			want := "LLM planner failed ("
			if !strings.HasPrefix(why, want) || !strings.Contains(why, c.because) ||
				!strings.Contains(why, "); heuristic planner: no flow") {
				t.Fatalf("explanation %q, want %q… mentioning %q and the heuristic planner", why, want, c.because)
			}
			if len(m.got()) != 1 {
				t.Fatalf("%d requests, want 1", len(m.got()))
			}
		})
	}
}

func TestLLMPlannerWithoutModelOrAgents(t *testing.T) {
	m := newFakeModel(t, false, answers(twoEchoSteps))
	cases := []struct {
		name    string
		p       *orchestrator.LLMPlanner
		agents  []discovery.Match
		because string
	}{
		{"no chat", &orchestrator.LLMPlanner{}, agentsFor("echo"), "LLM planner failed (no chat endpoint configured); heuristic planner"},
		{"no agents", &orchestrator.LLMPlanner{Chat: m.chat(t)}, nil, "LLM planner failed (no agent is registered to plan with); heuristic planner"},
		{"custom fallback", &orchestrator.LLMPlanner{Fallback: orchestrator.HeuristicPlanner{Embedder: "x"}}, agentsFor("echo"), "; heuristic planner: no flow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan, why, err := c.p.Plan(t.Context(), "hello", c.agents)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(why, c.because) {
				t.Fatalf("explanation %q does not say %q", why, c.because)
			}
			if len(plan.Steps) != 1 {
				t.Fatalf("plan %v", shape(plan))
			}
		})
	}
	if n := len(m.got()); n != 0 {
		t.Fatalf("the model was asked %d times with nothing to plan with", n)
	}
	failing := &orchestrator.LLMPlanner{Fallback: orchestrator.PlannerFunc(func(_ context.Context, _ string, _ []discovery.Match) (events.Plan, string, error) {
		return events.Plan{}, "", errors.New("no way")
	})}
	if _, _, err := failing.Plan(t.Context(), "hello", agentsFor("echo")); err == nil || !strings.Contains(err.Error(), "no way") {
		t.Fatalf("a failing fallback: err = %v", err)
	}
}

// TestLLMPlannerDescribesOnlyItsCards: the prompt holds the first Cards
// agents' capabilities; a plan may still use a capability of an agent past
// them, and none of those agents reaches the prompt.
func TestLLMPlannerDescribesOnlyItsCards(t *testing.T) {
	m := newFakeModel(t, false, answers(`{"steps":[{"id":"echo","capability":"echo"}]}`))
	agents := agentsFor("translate", "summarize", "classify", "echo", "search")
	for _, cards := range []int{2, 0} { // 0: discovery.DefaultK, all five
		p := &orchestrator.LLMPlanner{Chat: m.chat(t), Cards: cards}
		plan, why, err := p.Plan(t.Context(), "say hello", agents)
		if err != nil || len(plan.Steps) != 1 || plan.Steps[0].Capability != "echo" || !strings.HasPrefix(why, "LLM planner") {
			t.Fatalf("Cards %d: plan %+v, %q, %v", cards, plan, why, err)
		}
		reqs := m.got()
		prompt := reqs[len(reqs)-1].Messages[0].Content
		for i, a := range agents {
			in := strings.Contains(prompt, "(agent "+a.Name+")")
			if want := cards == 0 || i < cards; in != want {
				t.Errorf("Cards %d: agent %s in the prompt: %v, want %v", cards, a.Name, in, want)
			}
		}
	}
}
