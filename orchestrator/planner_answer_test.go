package orchestrator_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents/compose"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
)

// A planned plan of several agents none of which writes an answer gets
// an answer step over all its sinks: the result is one cited answer that
// covers every step's output. A submitted plan is never changed.
func TestPlannedPlansEndInAnAnswerOverEverySink(t *testing.T) {
	planner := orchestrator.PlannerFunc(func(_ context.Context, q string, _ []discovery.Match) (events.Plan, string, error) {
		return events.Plan{Steps: []events.PlanStep{step("weather", "echo"), step("news", "echo")}}, "test planner", nil
	})
	c, err := compose.New(compose.Config{})
	if err != nil {
		t.Fatal(err)
	}
	env := startPlanning(t, planner, c)

	submit(t, env.Bus, "default", "any-plan", events.WorkflowSubmitted{Query: "weather and news"})
	rs := collect(t, env.Bus, "default", "any-plan")
	if why := planned(t, rs); !strings.Contains(why, "answer (summarize) answers from [weather news]") {
		t.Fatalf("planned %q does not say an answer step was added", why)
	}
	var out compose.Output
	if err := json.Unmarshal(completed(t, rs).Result, &out); err != nil {
		t.Fatal(err)
	}
	var cited []string
	for _, ci := range out.Citations {
		cited = append(cited, ci.ChunkID)
	}
	slices.Sort(cited)
	if !slices.Equal(cited, []string{"news.output", "weather.output"}) || !strings.Contains(out.Answer, "**step weather**") {
		t.Fatalf("answer %q cites %v, want both steps' outputs", out.Answer, cited)
	}

	submit(t, env.Bus, "default", "own-plan", events.WorkflowSubmitted{Plan: plan(step("weather", "echo"), step("news", "echo"))})
	if c := completed(t, collect(t, env.Bus, "default", "own-plan")); strings.Contains(string(c.Result), "citations") {
		t.Fatalf("a submitted plan got an answer step: %s", c.Result)
	}
}
