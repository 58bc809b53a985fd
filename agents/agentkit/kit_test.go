package agentkit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
)

func TestNeedQuery(t *testing.T) {
	errNone := errors.New("x: no query")
	tests := []struct{ name, input, workflow, want string }{
		{"input wins", "  from input ", "from workflow", "from input"},
		{"workflow when the input has none", " ", " from workflow ", "from workflow"},
		{"neither", "", "  ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := agents.Request{StepID: "s1", Query: tt.workflow}
			if got := agentkit.QueryOf(req, tt.input); got != tt.want {
				t.Fatalf("QueryOf = %q, want %q", got, tt.want)
			}
			got, err := agentkit.NeedQuery(req, tt.input, errNone)
			if tt.want == "" {
				if !errors.Is(err, agents.ErrPermanent) || !errors.Is(err, errNone) || !strings.Contains(err.Error(), `"s1"`) {
					t.Fatalf("err = %v, want ErrPermanent and the sentinel naming the step", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("NeedQuery = %q, %v", got, err)
			}
		})
	}
}

func TestParseLLM(t *testing.T) {
	type out struct {
		Answer         string `json:"answer"`
		Method         string `json:"method"`
		Query          string `json:"query"`
		FallbackReason string `json:"fallback_reason"`
		Citations      []any  `json:"citations"`
	}
	spec := agentkit.Answer{Agent: "x", Schema: agentkit.OutputSchema("summarize"), Query: "q",
		Set: map[string]any{"citations": []any{}, "remembered": nil, "sources_used": 0}}
	tests := []struct{ name, answer, says string }{
		{"ok", `{"answer":"a","method":"heuristic","fallback_reason":"f","remembered":["r"],"citations":[1]}`, ""},
		{"not JSON", `answer: a`, "x: answer is not a JSON object"},
		{"null", `null`, "x: answer is not a JSON object"},
		{"array", `[1]`, "x: answer is not a JSON object"},
		{"schema", `{"answer":5}`, "/answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o out
			err := agentkit.ParseLLM(tt.answer, spec, &o)
			if tt.says != "" {
				if err == nil || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("err = %v, want one naming %q", err, tt.says)
				}
				return
			}
			if err != nil || o.Method != agentkit.MethodLLM || o.Query != "q" || o.FallbackReason != "" || o.Answer != "a" || len(o.Citations) != 0 {
				t.Fatalf("out %+v err %v", o, err)
			}
		})
	}
}

func TestSchemaPrompt(t *testing.T) {
	for filled, want := range map[string]string{
		"method":                      "; method are filled in",
		"method query":                "; method and query are filled in",
		"method query reference_time": "; method, query and reference_time are filled in",
	} {
		p := agentkit.SchemaPrompt(agentkit.OutputSchema("routing"), strings.Fields(filled)...)
		if !strings.Contains(p, want) || !strings.Contains(p, `"recommended_agents"`) {
			t.Errorf("%s: prompt %q", filled, p)
		}
	}
}

func TestLLMFirst(t *testing.T) {
	parse := func(a string) (string, error) {
		if a == "bad" {
			return "", errors.New("rejected")
		}
		return "llm:" + a, nil
	}
	heuristic := func() string { return "heuristic" }
	tests := []struct{ name, answer, want, reason string }{
		{"the LLM's answer", "good", "llm:good", ""},
		{"rejected answer", "bad", "heuristic", "rejected; used the heuristic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := kittest.Chat(t, 200, tt.answer)
			rec := &kittest.Recorder{}
			got, reason, err := agentkit.LLMFirst(t.Context(), rec, c, "sys", "usr", parse, heuristic)
			if err != nil || got != tt.want || !strings.HasSuffix(reason, tt.reason) || (tt.reason != "") != rec.Said("used the heuristic") {
				t.Fatalf("got %q reason %q err %v progress %q", got, reason, err, rec.Messages())
			}
		})
	}
	got, reason, err := agentkit.LLMFirst(t.Context(), nil, nil, "sys", "usr", parse, heuristic)
	if got != "heuristic" || reason != "" || err != nil {
		t.Fatalf("no LLM: got %q reason %q err %v", got, reason, err)
	}
}
