package toolagent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/permissions"
)

// tools returns the model's tools for a step: every capability a healthy
// registered agent serves with an input schema, but this agent's own and
// those the permissions deny to the step's tenant and role, by name.
func (a *Agent) tools(ctx context.Context, req agents.Request) ([]llm.Tool, error) {
	list, err := a.cfg.Tools.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("toolagent: listing the agents: %w", err)
	}
	byName := map[string]llm.Tool{}
	for _, in := range list {
		if in.Health != discovery.Healthy {
			continue
		}
		for c, schema := range in.InputSchemas {
			if _, seen := byName[c]; seen || c == Capability || !slices.Contains(in.Capabilities, c) || !json.Valid(schema) {
				continue
			}
			if a.cfg.Permissions.Check(req.TenantID, req.Role, c).Verdict == permissions.Denied {
				continue
			}
			byName[c] = llm.Tool{Name: c, Description: in.Description, Parameters: schema}
		}
	}
	out := make([]llm.Tool, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out, nil
}
