package orchestrator

import (
	"encoding/json"

	"github.com/agentbus/agentbus/events"
)

// EchoCapability is the capability a bare query is planned onto until a
// planner knows better.
const EchoCapability = "echo"

// PlanQuery plans a bare query as a single step on capability.
func PlanQuery(query, capability string) events.Plan {
	in, _ := json.Marshal(map[string]string{"query": query})
	return events.Plan{Steps: []events.PlanStep{{ID: capability, Capability: capability, Input: in}}}
}
