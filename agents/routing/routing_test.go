package routing_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/routing"
	"github.com/agentbus/agentbus/llm"
)

// newAgent makes an agent; c nil means no LLM.
func newAgent(t *testing.T, c agentkit.Completer, e llm.Embedder) *routing.Agent {
	t.Helper()
	return kittest.New(t, routing.New, routing.Config{LLM: c, Embedder: e})
}

func run(t *testing.T, a *routing.Agent, input, workflowQuery string) (routing.Output, *kittest.Recorder) {
	t.Helper()
	return kittest.Run[routing.Output](t, a, routing.OutputSchema, kittest.Step("routing", input, workflowQuery))
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
	if !rec.Said("routing among 2 capabilities") {
		t.Fatalf("progress = %q", rec.Messages())
	}
}

func TestHandleBadInput(t *testing.T) {
	kittest.CheckBadInputs(t, newAgent(t, nil, nil), []kittest.BadInput{
		{Name: "query not a string", Input: `{"query":5}`, Query: "q", Says: "/query"},
		{Name: "bad capability name", Input: `{"capabilities":["search","a.b"]}`, Query: "q", Says: "/capabilities/1"},
		{Name: "description not a string", Input: `{"descriptions":{"x":1}}`, Query: "q", Says: "/descriptions/x"},
		{Name: "no query anywhere", Input: `{}`, Query: "", Says: "no query"},
	})
}

const goodAnswer = `{"recommended_agents":[{"capability":"search","confidence":0.8,"reason":"needs documents"},
	{"capability":"summarize","confidence":0.6,"reason":"wants a summary"}],"confidence":0.8,
	"reasoning":"search then summarize","fallbacks":["detailed_report"]}`

func TestHandleLLM(t *testing.T) {
	c, srv := kittest.Chat(t, 200, goodAnswer)
	out, rec := run(t, newAgent(t, c, nil), `{"query":"summary of the raft paper"}`, "")
	if out.Method != "llm" || !slices.Equal(recommended(out), []string{"search", "summarize"}) || out.Reasoning != "search then summarize" {
		t.Fatalf("out = %+v", out)
	}
	if rec.Said("heuristic") || len(srv.Systems()) != 1 || !strings.Contains(srv.Systems()[0], `"recommended_agents"`) {
		t.Fatalf("progress %q, prompts %q", rec.Messages(), srv.Systems())
	}
}

func TestHandleLLMFallsBack(t *testing.T) {
	cases := []kittest.Fallback{
		{Name: "server error", Content: "model crashed", Says: "500", Status: 500},
		{Name: "not JSON", Content: "search, then summarize", Says: "not a JSON object", Status: 200},
		{Name: "schema-invalid", Content: strings.Replace(goodAnswer, `"confidence":0.8,"reason"`, `"confidence":2,"reason"`, 1), Says: "/recommended_agents/0/confidence", Status: 200},
		{Name: "unavailable capability", Content: strings.Replace(goodAnswer, `"capability":"search"`, `"capability":"websearch"`, 1), Says: `"websearch"`, Status: 200},
		{Name: "unavailable fallback", Content: strings.Replace(goodAnswer, `"detailed_report"`, `"translate"`, 1), Says: "/fallbacks/0", Status: 200},
	}
	kittest.CheckFallbacks(t, cases, func(t *testing.T, c *llm.Chat) (string, string, *kittest.Recorder) {
		out, rec := run(t, newAgent(t, c, nil), `{"query":"summary of the raft paper"}`, "")
		if recommended(out)[0] != "summarize" {
			t.Fatalf("heuristic recommended %q", recommended(out))
		}
		return out.Method, out.FallbackReason, rec
	})
}
