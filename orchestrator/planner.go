package orchestrator

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/llm"
)

// Planner turns a bare query into a plan. agents are the live registered
// agents: first the few that best fit the query by semantic discovery,
// with their cards, best first (Score set; see discovery.Match.Rank), then
// every other one without its card and with Score 0 (see candidates in
// route.go); a planner chooses among their capabilities. Besides the plan it
// returns a one-line explanation of how the plan was made, which the
// workflow's status event carries. The orchestrator still checks the plan
// (Stages, and that every capability is served) before running it.
//
// Implementations must be safe for concurrent use.
type Planner interface {
	Plan(ctx context.Context, query string, agents []discovery.Match) (events.Plan, string, error)
}

// PlannerFunc adapts a function to Planner.
type PlannerFunc func(ctx context.Context, query string, agents []discovery.Match) (events.Plan, string, error)

// Plan calls f.
func (f PlannerFunc) Plan(ctx context.Context, query string, agents []discovery.Match) (events.Plan, string, error) {
	return f(ctx, query, agents)
}

var (
	_ Planner = HeuristicPlanner{}
	_ Planner = (*LLMPlanner)(nil)
	_ Planner = PlannerFunc(nil)
)

// withDefaultPlanner returns cfg.Planner with its defaults filled in from
// cfg: a HeuristicPlanner with cfg.MinScore and the registry's embedder when
// none is set, and that same planner as the fallback of an LLMPlanner that
// names none, with cfg.Candidates as its Cards when it sets none.
// cfg.Registry must be set.
func withDefaultPlanner(cfg Config) Planner {
	h := HeuristicPlanner{MinScore: cfg.MinScore}
	if cfg.Registry != nil {
		h.Embedder = cfg.Registry.Embedder().Name()
	}
	switch p := cfg.Planner.(type) {
	case nil:
		return h
	case *LLMPlanner:
		if p.Fallback == nil || p.Cards == 0 {
			c := *p
			if c.Fallback == nil {
				c.Fallback = h
			}
			c.Cards = cmp.Or(c.Cards, cfg.Candidates)
			return &c
		}
	}
	return cfg.Planner
}

// stepInput is the input of every step a planner makes itself.
type stepInput struct {
	Query string `json:"query"`
	// Ensemble asks the search step to search every profile and fuse the
	// rankings (RRF) rather than search one.
	Ensemble bool `json:"ensemble,omitempty"`
}

func queryInput(query string, ensemble bool) json.RawMessage {
	b, _ := json.Marshal(stepInput{Query: query, Ensemble: ensemble})
	return b
}

// capabilities is the set of capabilities the agents offer.
func capabilities(agents []discovery.Match) map[string]bool {
	out := map[string]bool{}
	for _, a := range agents {
		for _, c := range a.Capabilities {
			out[c] = true
		}
	}
	return out
}

// namedCapability returns the first capability (agents in order, then each
// agent's capabilities in order) that the query names and skip does not
// exclude. A query names a capability when the capability's words appear in
// it in a row: "entity_extraction" is named by "run entity extraction on
// this", "echo" by "echo hello".
func namedCapability(query string, agents []discovery.Match, skip func(string) bool) (string, bool) {
	words := llm.Tokenize(query)
	for _, a := range agents {
		for _, c := range a.Capabilities {
			if skip != nil && skip(c) {
				continue
			}
			if cw := llm.Tokenize(c); len(cw) > 0 && containsRun(words, cw) {
				return c, true
			}
		}
	}
	return "", false
}

// containsRun reports whether run occurs in words as consecutive elements.
func containsRun(words, run []string) bool {
	for i := 0; i+len(run) <= len(words); i++ {
		if slices.Equal(words[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

// missing lists, in order, the capabilities of need that have is without.
func missing(need []string, have map[string]bool) []string {
	var out []string
	for _, c := range need {
		if !have[c] {
			out = append(out, c)
		}
	}
	return out
}

func joinComma(s []string) string { return strings.Join(s, ", ") }
