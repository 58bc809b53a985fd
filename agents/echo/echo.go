package echo

import (
	"context"
	"encoding/json"

	"github.com/agentbus/agentbus/agents"
)

// Capability is the capability the echo agent serves.
const Capability = "echo"

// Output is what the echo agent returns.
type Output struct {
	StepID            string                     `json:"step_id"`
	Input             json.RawMessage            `json:"input,omitempty"`
	DependencyOutputs map[string]json.RawMessage `json:"dependency_outputs,omitempty"`
}

// Agent echoes its input and its dependencies' outputs.
type Agent struct{}

var _ agents.Agent = Agent{}

// Card describes the echo agent.
func (Agent) Card() agents.Card {
	return agents.Card{
		Name: "echo", Version: "1.0.0", Capabilities: []string{Capability},
		Description: "Returns its input and the outputs of the steps it depends on; shows a plan's data flow.",
		Examples:    []string{"echo hello", "show me the data flow of this plan"},
	}
}

// Handle returns the step's input with its dependency outputs.
func (Agent) Handle(_ context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
	return json.Marshal(Output{StepID: req.StepID, Input: req.Input, DependencyOutputs: req.DependencyOutputs})
}
