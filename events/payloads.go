package events

import "encoding/json"

// Plan is a DAG of steps; each step needs one capability and may depend on others.
type Plan struct {
	Steps []PlanStep `json:"steps"`
}

// PlanStep is one node of a Plan.
type PlanStep struct {
	ID         string          `json:"id"`
	Capability string          `json:"capability"`
	Input      json.RawMessage `json:"input,omitempty"`
	DependsOn  []string        `json:"depends_on,omitempty"`
}

// WorkflowSubmitted is the data of TypeWorkflowSubmitted: a bare query, an
// explicit plan, or both (the plan wins; the query is kept for context).
type WorkflowSubmitted struct {
	Query    string            `json:"query,omitempty"`
	Plan     *Plan             `json:"plan,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// StepRequested is the data of TypeStepRequested. DependencyOutputs carries
// the output of every step this one depends on, keyed by step id.
type StepRequested struct {
	StepID            string                     `json:"step_id"`
	Capability        string                     `json:"capability"`
	Attempt           int                        `json:"attempt"`
	Query             string                     `json:"query,omitempty"`
	Input             json.RawMessage            `json:"input,omitempty"`
	DependencyOutputs map[string]json.RawMessage `json:"dependency_outputs,omitempty"`
}

// StepCompleted is the data of TypeStepCompleted.
type StepCompleted struct {
	StepID     string          `json:"step_id"`
	Capability string          `json:"capability"`
	Attempt    int             `json:"attempt"`
	Output     json.RawMessage `json:"output"`
	Worker     string          `json:"worker,omitempty"`
	DurationMS float64         `json:"duration_ms,omitempty"`
}

// StepFailed is the data of TypeStepFailed.
type StepFailed struct {
	StepID     string `json:"step_id"`
	Capability string `json:"capability"`
	Attempt    int    `json:"attempt"`
	Error      string `json:"error"`
	Retryable  bool   `json:"retryable,omitempty"`
	Worker     string `json:"worker,omitempty"`
}

// Control is the data of TypeControl.
type Control struct {
	Action string `json:"action"` // "cancel"
	Reason string `json:"reason,omitempty"`
}

// Status is the data of TypeStatus: the workflow's state (StepID empty) or a step's.
type Status struct {
	State   State  `json:"state"`
	StepID  string `json:"step_id,omitempty"`
	Message string `json:"message,omitempty"`
}

// Progress is the data of TypeProgress.
type Progress struct {
	CompletedSteps int     `json:"completed_steps"`
	TotalSteps     int     `json:"total_steps"`
	Percent        float64 `json:"percent"`
	StepID         string  `json:"step_id,omitempty"`
	Message        string  `json:"message,omitempty"`
}

// Artifact is the data of TypeArtifact: a result or a chunk of one. Chunks of
// one artifact share ArtifactID; Append says "add to what came before" and
// LastChunk closes it (the A2A artifact-update semantics).
type Artifact struct {
	ArtifactID string          `json:"artifact_id"`
	StepID     string          `json:"step_id,omitempty"`
	Name       string          `json:"name,omitempty"`
	Data       json.RawMessage `json:"data"`
	Append     bool            `json:"append,omitempty"`
	LastChunk  bool            `json:"last_chunk,omitempty"`
}

// Error codes carried by Error events.
const (
	CodeInvalidRequest    = "invalid_request"
	CodeInvalidPlan       = "invalid_plan"
	CodeUnknownCapability = "unknown_capability"
	CodeUnknownDependency = "unknown_dependency"
	CodeCycle             = "cycle"
	CodeStepFailed        = "step_failed"
)

// Error is the data of TypeError, the terminal event of a failed workflow.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	StepID  string `json:"step_id,omitempty"`
	Pointer string `json:"pointer,omitempty"`
}

// Complete is the data of TypeComplete: every step's output by step id, and
// the result (the output of the plan's sink steps).
type Complete struct {
	Result     json.RawMessage            `json:"result"`
	Outputs    map[string]json.RawMessage `json:"outputs"`
	DurationMS float64                    `json:"duration_ms"`
}

// Cancelled is the data of TypeCancelled.
type Cancelled struct {
	Reason string `json:"reason,omitempty"`
}
