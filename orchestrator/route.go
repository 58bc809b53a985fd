package orchestrator

import (
	"context"
	"fmt"

	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
)

// planQuery plans a bare query with the configured Planner and says how it
// was planned. The planner sees the cards of the Config.Candidates agents
// that best fit the query, then every other live agent without its card
// (see candidates). If the registry cannot be read, or the planner fails,
// the query is planned as one echo step and the explanation says why.
func (o *Orchestrator) planQuery(ctx context.Context, query string) (events.Plan, string) {
	agents, err := o.agents(ctx, query)
	if err != nil {
		o.log.Warn("planning without the agent registry", "err", err)
		return PlanQuery(query, EchoCapability), "routed to echo: the agent registry is unavailable"
	}
	p, why, err := o.cfg.Planner.Plan(ctx, query, agents)
	if err != nil {
		o.log.Warn("planner failed", "err", err)
		return PlanQuery(query, EchoCapability), fmt.Sprintf("routed to echo: the planner failed (%s)", reason(err))
	}
	return p, why
}

// agents returns what a planner sees for query: discovery's top
// Config.Candidates agents with their cards, best first, then the rest of
// the live agents without cards (candidates). When ranking fails (a remote
// embedder down) the first Candidates agents by name take the top's place,
// unranked (score 0), so that planners still see what is registered.
func (o *Orchestrator) agents(ctx context.Context, query string) ([]discovery.Match, error) {
	reg, k := o.cfg.Registry, o.cfg.Candidates
	all, err := reg.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	top, err := reg.Discover(ctx, query, k)
	if err != nil {
		o.log.Warn("discovery failed; planning with unranked agents", "err", err)
		top = all[:min(k, len(all))]
	}
	return candidates(top, all), nil
}

// candidates is top, the agents a planner may read the cards of (at most
// Config.Candidates, best first), followed by every agent of all that top
// lacks, in name order, with its card left out: Description and Examples
// empty, Score and Rank 0. Planners so know every capability that is
// served — the heuristic planner's flows need to — while only the top
// agents' cards reach, say, an LLM's prompt (LLMPlanner.Cards). The rest
// score 0, below any MinScore, so no planner routes to them by similarity;
// a query that names one of their capabilities still reaches it.
func candidates(top, all []discovery.Match) []discovery.Match {
	out := make([]discovery.Match, 0, len(all)+len(top))
	in := make(map[string]bool, len(top))
	for _, m := range top {
		out = append(out, m)
		in[m.Name] = true
	}
	for _, m := range all {
		if in[m.Name] {
			continue
		}
		m.Description, m.Examples, m.Score, m.Rank = "", nil, 0, 0
		out = append(out, m)
	}
	return out
}
