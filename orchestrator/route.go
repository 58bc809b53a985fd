package orchestrator

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/llm"
)

// planQuery plans a bare query and says how it was planned. Today: one
// step on the capability route picks.
func (o *Orchestrator) planQuery(ctx context.Context, query string) (events.Plan, string) {
	capability, why := o.route(ctx, query)
	return PlanQuery(query, capability), why
}

// route picks the capability for a bare query and says why: a registered
// capability the query names, else the best agent by semantic discovery
// (embed the query, top-k by similarity, route to the first), else echo.
func (o *Orchestrator) route(ctx context.Context, query string) (string, string) {
	reg := o.cfg.Registry
	list, err := reg.List(ctx)
	if err != nil {
		o.log.Warn("routing without the registry", "err", err)
		return EchoCapability, "routed to echo: the agent registry is unavailable"
	}
	words := llm.Tokenize(query)
	for _, in := range list {
		for _, c := range in.Capabilities {
			if slices.Contains(words, c) {
				return c, fmt.Sprintf("routed to %s: the query names it", c)
			}
		}
	}
	matches, err := reg.Discover(ctx, query, 5)
	if err != nil {
		o.log.Warn("discovery failed", "err", err)
		return EchoCapability, "routed to echo: discovery failed"
	}
	if len(matches) > 0 && matches[0].Score >= o.cfg.MinScore && len(matches[0].Capabilities) > 0 {
		m := matches[0]
		return m.Capabilities[0], fmt.Sprintf("routed to %s by semantic discovery (agent %s, similarity %.2f, embedder %s)",
			m.Capabilities[0], m.Name, m.Score, reg.Embedder().Name())
	}
	return EchoCapability, "routed to echo: no agent matches the query"
}
