package events

import "strings"

// Type is a CloudEvent type: reverse-DNS and versioned.
type Type string

// The CloudEvent types of DESIGN.md §2.
const (
	// TypeWorkflowSubmitted asks for a workflow to run; data is WorkflowSubmitted.
	TypeWorkflowSubmitted Type = "io.agentbus.workflow.submitted.v1"
	// TypeStepRequested asks an agent to run one plan step; data is StepRequested.
	TypeStepRequested Type = "io.agentbus.step.requested.v1"
	// TypeStepCompleted is an agent's result for a step; data is StepCompleted.
	TypeStepCompleted Type = "io.agentbus.step.completed.v1"
	// TypeStepFailed is an agent's failure for a step; data is StepFailed.
	TypeStepFailed Type = "io.agentbus.step.failed.v1"
	// TypeStepRunning is a worker's word that it still runs a step an
	// orchestrator handed to it with a verdict (eager dispatch), renewing
	// the step's lease; data is StepRunning.
	TypeStepRunning Type = "io.agentbus.step.running.v1"
	// TypeControl is a control message (cancel); data is Control.
	TypeControl Type = "io.agentbus.workflow.control.v1"
	// TypeDeadline is a workflow's durable timer, held on its reply subject
	// until it is due; data is Deadline.
	TypeDeadline Type = "io.agentbus.workflow.deadline.v1"
	// TypeScheduleFire asks an orchestrator to start a schedule's workflow
	// for a slot; data is ScheduleFire.
	TypeScheduleFire Type = "io.agentbus.schedule.fire.v1"

	// TypeStatus is a client event: the workflow's or a step's state changed; data is Status.
	TypeStatus Type = "io.agentbus.workflow.status.v1"
	// TypeProgress is a client event: how far the workflow is; data is Progress.
	TypeProgress Type = "io.agentbus.workflow.progress.v1"
	// TypeArtifact is a client event: a (partial) result; data is Artifact.
	TypeArtifact Type = "io.agentbus.workflow.artifact.v1"
	// TypeError is a terminal client event: the workflow failed; data is Error.
	TypeError Type = "io.agentbus.workflow.error.v1"
	// TypeComplete is a terminal client event: the workflow completed; data is Complete.
	TypeComplete Type = "io.agentbus.workflow.complete.v1"
	// TypeCancelled is a terminal client event: the workflow was canceled; data is Cancelled.
	TypeCancelled Type = "io.agentbus.workflow.cancelled.v1"
	// TypeCustom is a client event an application adds to a workflow's log
	// (a Watermill message published into agentbus, say); data is Custom.
	TypeCustom Type = "io.agentbus.workflow.custom.v1"
)

// typeInfo ties a type to its JSON Schema (in package schemas) and to the
// short name used in client frames.
var typeInfo = map[Type]struct{ schema, short string }{
	TypeWorkflowSubmitted: {"workflow.submitted", "submitted"},
	TypeStepRequested:     {"step.requested", "step.requested"},
	TypeStepCompleted:     {"step.completed", "step.completed"},
	TypeStepFailed:        {"step.failed", "step.failed"},
	TypeStepRunning:       {"step.running", "step.running"},
	TypeControl:           {"control", "control"},
	TypeDeadline:          {"deadline", "deadline"},
	TypeScheduleFire:      {"schedule.fire", "schedule.fire"},
	TypeStatus:            {"status", "status"},
	TypeProgress:          {"progress", "progress"},
	TypeArtifact:          {"artifact", "artifact"},
	TypeError:             {"error", "error"},
	TypeComplete:          {"complete", "complete"},
	TypeCancelled:         {"cancelled", "cancelled"},
	TypeCustom:            {"custom", "custom"},
}

// Types returns every known type, for documentation and tests.
func Types() []Type {
	out := make([]Type, 0, len(typeInfo))
	for t := range typeInfo {
		out = append(out, t)
	}
	return out
}

// Known reports whether t is an agentbus event type.
func (t Type) Known() bool { _, ok := typeInfo[t]; return ok }

// Schema returns the name of t's data schema in package schemas.
func (t Type) Schema() string { return typeInfo[t].schema }

// Short returns the name used in client frames ("status", "complete", …).
func (t Type) Short() string {
	if i, ok := typeInfo[t]; ok {
		return i.short
	}
	return strings.TrimPrefix(string(t), "io.agentbus.")
}

// Terminal reports whether t ends a workflow's event stream.
func (t Type) Terminal() bool {
	return t == TypeComplete || t == TypeError || t == TypeCancelled
}

// State is a task or workflow state; the values follow A2A.
type State string

// The A2A task states.
const (
	StateSubmitted     State = "submitted"
	StateWorking       State = "working"
	StateInputRequired State = "input-required"
	StateCompleted     State = "completed"
	StateFailed        State = "failed"
	StateCanceled      State = "canceled"
	StateRejected      State = "rejected"
)

// Terminal reports whether s is a final state.
func (s State) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateCanceled || s == StateRejected
}
