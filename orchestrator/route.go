package orchestrator

import (
	"context"
	"fmt"

	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
)

// discoverAll is more agents than any deployment registers, so that
// Discover ranks them all.
const discoverAll = 1 << 16

// planQuery plans a bare query with the configured Planner and says how it
// was planned. The planner sees every live registered agent, ranked by
// semantic similarity to the query. If the registry cannot be read, or the
// planner fails, the query is planned as one echo step and the explanation
// says why.
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

// agents returns the live registered agents ranked against query. When
// ranking fails (a remote embedder down) it returns them unranked (score
// 0), so that planners still see what is registered.
func (o *Orchestrator) agents(ctx context.Context, query string) ([]discovery.Match, error) {
	reg := o.cfg.Registry
	matches, err := reg.Discover(ctx, query, discoverAll)
	if err == nil {
		return matches, nil
	}
	o.log.Warn("discovery failed; planning with unranked agents", "err", err)
	list, lerr := reg.List(ctx)
	if lerr != nil {
		return nil, lerr
	}
	byName := map[string]int{}
	var out []discovery.Match
	for _, in := range list {
		if in.Health == discovery.Unreachable {
			continue
		}
		i, ok := byName[in.Name]
		if !ok {
			i = len(out)
			byName[in.Name] = i
			out = append(out, discovery.Match{Name: in.Name, Version: in.Version, Description: in.Description,
				Capabilities: in.Capabilities, Examples: in.Examples})
		}
		out[i].Instances++
		if in.Health == discovery.Healthy {
			out[i].Healthy++
		}
	}
	return out, nil
}
