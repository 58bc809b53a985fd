package toolagent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/subflow"
	"github.com/agentbus/agentbus/events"
)

// Metadata keys of a child workflow: the workflow, step and tool call it
// runs for (the first two are subflow's, as every child workflow has).
const (
	MetadataParentWorkflow = subflow.MetadataParentWorkflow
	MetadataParentStep     = subflow.MetadataParentStep
	MetadataToolCall       = "tool_call"
)

// ChildStep is the id of a child workflow's one step.
const ChildStep = "call"

// source is the CloudEvent source of the agent's submissions.
const source = "/agentbus/agents/" + Capability

// outcome is how a child workflow ended: its result, or why it has none.
type outcome struct {
	workflow string
	result   json.RawMessage
	state    events.State
	err      string
}

// childID is the child workflow of a tool call: the same for the same
// call (tool and arguments) at the same place of the same step attempt,
// so that a run of the step redelivered after a crash follows the child
// it had started rather than run the tool again.
func childID(req agents.Request, iteration, call int, tool, args string) string {
	return subflow.ID("tc-", req, strconv.Itoa(iteration), strconv.Itoa(call), tool, args)
}

// run runs a tool call as a child workflow (subflow.Runner.Run) and says
// how it ended; when ctx ends first the child is canceled.
func (a *Agent) run(ctx context.Context, req agents.Request, emit agents.Emitter, wf, tool string, args json.RawMessage, callID string) outcome {
	o, err := a.children.Run(ctx, req, emit, subflow.Child{
		ID:       wf,
		Query:    fmt.Sprintf("tool call %s of step %s (workflow %s)", tool, req.StepID, req.WorkflowID),
		Plan:     &events.Plan{Steps: []events.PlanStep{{ID: ChildStep, Capability: tool, Input: args}}},
		Metadata: map[string]string{MetadataToolCall: callID},
		Label:    "tool call " + tool,
	})
	out := outcome{workflow: wf}
	switch {
	case err != nil && ctx.Err() != nil:
		out.state, out.err = events.StateCanceled, "the agent step that called it ended: "+err.Error()
	case err != nil:
		out.state, out.err = events.StateFailed, err.Error()
	default:
		out.state, out.result, out.err = o.State, o.Result, o.Error.Message
	}
	return out
}
