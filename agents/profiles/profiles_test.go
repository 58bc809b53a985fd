package profiles_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/profiles"
	"github.com/agentbus/agentbus/llm"
)

// newAgent makes an agent; c nil means no LLM.
func newAgent(t *testing.T, c agentkit.Completer) *profiles.Agent {
	t.Helper()
	return kittest.New(t, profiles.New, profiles.Config{LLM: c})
}

func run(t *testing.T, a *profiles.Agent, input, workflowQuery string) (profiles.Output, *kittest.Recorder) {
	t.Helper()
	return kittest.Run[profiles.Output](t, a, profiles.OutputSchema, kittest.Step("profile_selection", input, workflowQuery))
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
	if !rec.Said("selecting search profiles among bm25, vector") {
		t.Fatalf("progress = %q", rec.Messages())
	}
}

func TestHandleBadInput(t *testing.T) {
	kittest.CheckBadInputs(t, newAgent(t, nil), []kittest.BadInput{
		{Name: "query not a string", Input: `{"query":5}`, Query: "q", Says: "/query"},
		{Name: "profile not a string", Input: `{"profiles":["bm25",1]}`, Query: "q", Says: "/profiles/1"},
		{Name: "duplicate profiles", Input: `{"profiles":["bm25","bm25"]}`, Query: "q", Says: "/profiles"},
		{Name: "ensemble not a bool", Input: `{"ensemble":"yes"}`, Query: "q", Says: "/ensemble"},
		{Name: "no query anywhere", Input: `{}`, Query: "", Says: "no query"},
	})
}

const goodAnswer = `{"intent":"troubleshooting","modality":"code","complexity":{"level":"simple","score":0.2},
	"signals":{"lexical":0.8,"semantic":0.3},"selected":[{"name":"bm25","confidence":0.8}],
	"alternatives":[{"name":"vector","confidence":0.3}],"ensemble":false,"reasoning":"exact error code"}`

func TestHandleLLM(t *testing.T) {
	c, srv := kittest.Chat(t, 200, goodAnswer)
	a := newAgent(t, c)
	out, rec := run(t, a, `{"query":"error E1234"}`, "")
	if out.Method != "llm" || out.FallbackReason != "" || out.Intent != "troubleshooting" || out.Reasoning != "exact error code" {
		t.Fatalf("out = %+v", out)
	}
	if rec.Said("heuristic") || len(srv.Systems()) != 1 || !strings.Contains(srv.Systems()[0], `"alternatives"`) {
		t.Fatalf("progress %q, prompts %q", rec.Messages(), srv.Systems())
	}
	// A requested ensemble survives a model that did not want one.
	out, _ = run(t, a, `{"query":"error E1234","ensemble":true}`, "")
	if out.Method != "llm" || !out.Ensemble || !slices.Equal(choiceNames(out.Selected), []string{"bm25", "vector"}) {
		t.Fatalf("out = %+v", out)
	}
}

func TestHandleLLMFallsBack(t *testing.T) {
	cases := []kittest.Fallback{
		{Name: "server error", Content: "model crashed", Says: "500", Status: 500},
		{Name: "not JSON", Content: "use bm25", Says: "not a JSON object", Status: 200},
		{Name: "schema-invalid", Content: strings.Replace(goodAnswer, `"confidence":0.8`, `"confidence":"high"`, 1), Says: "/selected/0/confidence", Status: 200},
		{Name: "nothing selected", Content: strings.Replace(goodAnswer, `[{"name":"bm25","confidence":0.8}]`, `[]`, 1), Says: "/selected", Status: 200},
		{Name: "unavailable profile", Content: strings.Replace(goodAnswer, `"name":"bm25"`, `"name":"splade"`, 1), Says: `"splade"`, Status: 200},
	}
	kittest.CheckFallbacks(t, cases, func(t *testing.T, c *llm.Chat) (string, string, *kittest.Recorder) {
		out, rec := run(t, newAgent(t, c), `{"query":"error E1234"}`, "")
		if !slices.Equal(choiceNames(out.Selected), []string{"bm25"}) {
			t.Fatalf("heuristic selected %+v", out.Selected)
		}
		return out.Method, out.FallbackReason, rec
	})
}
