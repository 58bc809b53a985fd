package enhance_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/enhance"
	"github.com/agentbus/agentbus/llm"
)

// newAgent makes an agent; c nil means no LLM.
func newAgent(t *testing.T, c agentkit.Completer) *enhance.Agent {
	t.Helper()
	return kittest.New(t, enhance.New, enhance.Config{LLM: c})
}

func run(t *testing.T, a *enhance.Agent, input, workflowQuery string) (enhance.Output, *kittest.Recorder) {
	t.Helper()
	return kittest.Run[enhance.Output](t, a, enhance.OutputSchema, kittest.Step("query_enhancement", input, workflowQuery))
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
			// A one-short-word focus ("go") would match nearly everything:
			// no entity-focused variant.
			query:      "serializing Go values",
			keywords:   []string{"serializing", "go", "values"},
			expansions: []string{"golang"},
			synonyms:   map[string][]string{"go": {"golang"}},
			variants:   []string{"serializing Go values", "serializing golang values", "serializing go values golang"},
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
	if !rec.Said("enhancing query") {
		t.Fatalf("progress = %q", rec.Messages())
	}
}

func TestHandleBadInput(t *testing.T) {
	kittest.CheckBadInputs(t, newAgent(t, nil), []kittest.BadInput{
		{Name: "query not a string", Input: `{"query":5}`, Query: "q", Says: "/query"},
		{Name: "too many variants", Input: `{"max_variants":6}`, Query: "q", Says: "/max_variants"},
		{Name: "no query anywhere", Input: `{}`, Query: " ", Says: "no query"},
	})
}

func TestHandleLLM(t *testing.T) {
	c, srv := kittest.Chat(t, 200, `{"keywords":["postgres","slow"],"expansions":["index tuning"],"synonyms":{"slow":["sluggish"]},
		"variants":["postgres slow queries","POSTGRES SLOW QUERIES","explain analyze postgres"]}`)
	out, rec := run(t, newAgent(t, c), `{"query":"why is postgres slow"}`, "")
	if out.Method != "llm" || out.FallbackReason != "" {
		t.Fatalf("method %q reason %q", out.Method, out.FallbackReason)
	}
	want := []string{"why is postgres slow", "postgres slow queries", "explain analyze postgres"}
	if !slices.Equal(out.Variants, want) {
		t.Fatalf("variants = %q, want %q (original first, repeats dropped)", out.Variants, want)
	}
	if len(srv.Systems()) != 1 || !strings.Contains(srv.Systems()[0], `"variants"`) {
		t.Fatalf("system prompt lacks the schema: %q", srv.Systems())
	}
	if rec.Said("heuristic") {
		t.Fatalf("progress says fallback: %q", rec.Messages())
	}
}

func TestHandleLLMFallsBack(t *testing.T) {
	cases := []kittest.Fallback{
		{Name: "server error", Content: "model crashed", Says: "500", Status: 500},
		{Name: "not JSON", Content: "here you go: postgres", Says: "not a JSON object", Status: 200},
		{Name: "schema-invalid", Content: `{"keywords":"postgres","expansions":[],"synonyms":{},"variants":["a"]}`, Says: "/keywords", Status: 200},
		{Name: "only the original", Content: `{"keywords":[],"expansions":[],"synonyms":{},"variants":["Why is postgres slow"]}`, Says: "no variant besides", Status: 200},
	}
	kittest.CheckFallbacks(t, cases, func(t *testing.T, c *llm.Chat) (string, string, *kittest.Recorder) {
		out, rec := run(t, newAgent(t, c), `{"query":"why is postgres slow"}`, "")
		if !slices.Equal(out.Variants, []string{"why is postgres slow", "postgres slow", "postgresql sluggish", "postgres slow because"}) {
			t.Fatalf("heuristic variants = %q", out.Variants)
		}
		return out.Method, out.FallbackReason, rec
	})
}
