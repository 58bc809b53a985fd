package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/workflow"
)

// Completer answers a system and a user message with text that should be
// one JSON object. *llm.Chat is the Completer agentbus uses.
type Completer interface {
	CompleteJSON(ctx context.Context, system, user string) (string, error)
}

var _ Completer = (*llm.Chat)(nil)

// LLMPlanner plans with a language model behind an OpenAI-compatible
// chat-completions endpoint. It tells the model the capabilities of the
// first Cards agents it is given — the orchestrator gives the agents that
// best fit the query first (the seed's "embed → top 5 → LLM decides") —
// with their descriptions and examples, never the whole registry, and the
// plan JSON Schema; asks for a JSON plan; and accepts the answer only if it
// is JSON, valid against schemas.Plan, passes Stages (no cycle, no unknown
// dependency, no duplicate id) and uses capabilities that some agent it was
// given offers (the agents past Cards count here, not in the prompt).
// Otherwise — the endpoint is down, times out, errs, or answers badly — it
// plans with Fallback and says why in the explanation:
// "LLM planner failed (…); heuristic planner: …".
//
// Steps the model leaves without input get {"query": …}. An *LLMPlanner is
// safe for concurrent use if its Chat and Fallback are.
type LLMPlanner struct {
	// Chat asks the model; required (without it every query falls back).
	Chat Completer
	// Fallback plans when the model cannot; default: the orchestrator's
	// HeuristicPlanner (HeuristicPlanner{} outside an orchestrator).
	Fallback Planner
	// Cards is how many agents, from the first, the prompt describes;
	// default: the orchestrator's Config.Candidates
	// (discovery.DefaultK outside an orchestrator).
	Cards int
}

// cards returns the agents whose cards the prompt describes.
func (p *LLMPlanner) cards(agents []discovery.Match) []discovery.Match {
	n := p.Cards
	if n <= 0 {
		n = discovery.DefaultK
	}
	return agents[:min(n, len(agents))]
}

// Plan asks the model for a plan, or falls back (see LLMPlanner). It fails
// only if the fallback fails.
func (p *LLMPlanner) Plan(ctx context.Context, query string, agents []discovery.Match) (events.Plan, string, error) {
	plan, err := p.ask(ctx, query, agents)
	if err == nil {
		return plan, fmt.Sprintf("LLM planner (%s): %s", p.name(), describePlan(plan)), nil
	}
	fallback := p.Fallback
	if fallback == nil {
		fallback = HeuristicPlanner{}
	}
	fp, why, ferr := fallback.Plan(ctx, query, agents)
	if ferr != nil {
		return events.Plan{}, "", fmt.Errorf("orchestrator: LLM planner failed (%s) and so did its fallback: %w", reason(err), ferr)
	}
	return fp, fmt.Sprintf("LLM planner failed (%s); %s", reason(err), why), nil
}

// name is the model's name when the Completer tells it.
func (p *LLMPlanner) name() string {
	if n, ok := p.Chat.(interface{ Name() string }); ok {
		return n.Name()
	}
	return "OpenAI-compatible endpoint"
}

// ask gets a plan from the model and checks it; its errors say, for people,
// what was wrong.
func (p *LLMPlanner) ask(ctx context.Context, query string, agents []discovery.Match) (events.Plan, error) {
	if p.Chat == nil {
		return events.Plan{}, errors.New("no chat endpoint configured")
	}
	have := capabilities(agents)
	if len(have) == 0 {
		return events.Plan{}, errors.New("no agent is registered to plan with")
	}
	system, err := systemPrompt(p.cards(agents))
	if err != nil {
		return events.Plan{}, err
	}
	answer, err := p.Chat.CompleteJSON(ctx, system, query)
	if err != nil {
		return events.Plan{}, err
	}
	body := extractJSON(answer)
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return events.Plan{}, fmt.Errorf("the answer is not JSON: %v: %q", err, clip(answer, 60))
	}
	if err := schemas.Validate(schemas.Plan, body); err != nil {
		var ve *schemas.ValidationError
		if !errors.As(err, &ve) {
			return events.Plan{}, err
		}
		return events.Plan{}, fmt.Errorf("the answer is not a valid plan: %s", problems(ve.Problems))
	}
	var plan events.Plan
	if err := json.Unmarshal(body, &plan); err != nil {
		return events.Plan{}, fmt.Errorf("the answer is not a plan: %v", err)
	}
	if _, err := workflow.Stages(plan); err != nil {
		return events.Plan{}, fmt.Errorf("the plan is not runnable: %s", reason(err))
	}
	for _, s := range plan.Steps {
		if !have[s.Capability] {
			return events.Plan{}, fmt.Errorf("the plan is not runnable: step %q needs capability %q, which no registered agent offers", s.ID, s.Capability)
		}
		if s.Fallback != "" && !have[s.Fallback] {
			return events.Plan{}, fmt.Errorf("the plan is not runnable: step %q falls back to capability %q, which no registered agent offers", s.ID, s.Fallback)
		}
	}
	for i, s := range plan.Steps {
		if len(s.Input) == 0 || string(s.Input) == "null" {
			plan.Steps[i].Input = queryInput(query, false)
		}
	}
	return plan, nil
}

// systemPrompt tells the model what it may plan with and how to answer.
func systemPrompt(agents []discovery.Match) (string, error) {
	schema, err := schemas.Source(schemas.Plan)
	if err != nil {
		return "", fmt.Errorf("plan schema unavailable: %w", err)
	}
	type offer struct{ capability, agent, description string }
	var offers []offer
	seen := map[string]bool{}
	for _, a := range agents {
		for _, c := range a.Capabilities {
			if seen[c] {
				continue
			}
			seen[c] = true
			d := clip(a.Description, 300)
			if len(a.Examples) > 0 {
				d += " Example queries: " + clip(strings.Join(a.Examples[:min(3, len(a.Examples))], "; "), 200)
			}
			offers = append(offers, offer{c, a.Name, d})
		}
	}
	if len(offers) == 0 {
		return "", errors.New("none of the agents that fit the query offers a capability")
	}
	// A stable order keeps the prompt the same for the same agents.
	slices.SortFunc(offers, func(a, b offer) int { return strings.Compare(a.capability, b.capability) })
	var b strings.Builder
	b.WriteString("You are the planner of agentbus, a multi-agent pipeline. The user's message is a query. " +
		"Turn it into a plan: a DAG of steps, each run by an agent that offers the step's capability. " +
		"Steps run in parallel unless one depends on another; a step runs after every step in its depends_on " +
		"and receives their outputs.\n\nCapabilities you may use (no others):\n")
	for _, o := range offers {
		fmt.Fprintf(&b, "- %s (agent %s): %s\n", o.capability, o.agent, o.description)
	}
	b.WriteString("\nAnswer with one JSON object and nothing else, valid against this JSON Schema:\n")
	b.Write(schema)
	b.WriteString("\nRules: step ids are unique (the capability name is a good id); every depends_on entry is the id " +
		"of another step; no cycles; give every step an input object with the query, " +
		`{"query": "…"}, reworded for that step if it helps; use as few steps as the query needs; leave out ` +
		"optional, fallback and requires_approval unless the query asks for them.\n")
	ex := events.Plan{Steps: []events.PlanStep{{ID: offers[0].capability, Capability: offers[0].capability, Input: queryInput("…", false)}}}
	if len(offers) > 1 {
		ex.Steps = append(ex.Steps, events.PlanStep{ID: offers[1].capability, Capability: offers[1].capability,
			Input: queryInput("…", false), DependsOn: []string{offers[0].capability}})
	}
	example, _ := json.Marshal(ex)
	b.WriteString("Example of the form (not of the content): ")
	b.Write(example)
	return b.String(), nil
}

// extractJSON takes the JSON object out of an answer that wraps it in a
// Markdown code fence or in prose, as models without a JSON mode do.
func extractJSON(answer string) []byte {
	s := strings.TrimSpace(answer)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s[3:], "json")
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
	}
	if !strings.HasPrefix(s, "{") {
		if i, j := strings.Index(s, "{"), strings.LastIndex(s, "}"); i >= 0 && j > i {
			s = s[i : j+1]
		}
	}
	return []byte(s)
}

// problems lists up to three schema problems as "pointer: message".
func problems(ps []schemas.Problem) string {
	var parts []string
	for _, p := range ps[:min(3, len(ps))] {
		ptr := p.Pointer
		if ptr == "" {
			ptr = "/"
		}
		parts = append(parts, ptr+": "+p.Message)
	}
	if len(ps) > 3 {
		parts = append(parts, fmt.Sprintf("and %d more", len(ps)-3))
	}
	return strings.Join(parts, "; ")
}

// reason is an error's message without its package prefix, for
// explanations read by people.
func reason(err error) string {
	s := err.Error()
	for _, prefix := range []string{"orchestrator: ", "llm: "} {
		s = strings.TrimPrefix(s, prefix)
	}
	return s
}

// clip shortens s to n runes on one line.
func clip(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n]) + "…"
}
