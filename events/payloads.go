package events

import (
	"encoding/json"
	"time"
)

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
	// Optional steps may fail without failing the workflow: dependents run
	// with a null output for them, and the result is partial.
	Optional bool `json:"optional,omitempty"`
	// Fallback is a capability to try once if this step fails.
	Fallback string `json:"fallback,omitempty"`
	// RequiresApproval holds the step's result for a human decision unless
	// its output carries a "confidence" at or above the threshold.
	RequiresApproval bool `json:"requires_approval,omitempty"`
	// TimeoutMS bounds one run of the step (the worker's own limit still
	// applies if lower).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// WorkflowSubmitted is the data of TypeWorkflowSubmitted: a bare query, an
// explicit plan, or both (the plan wins; the query is kept for context).
type WorkflowSubmitted struct {
	Query    string            `json:"query,omitempty"`
	Plan     *Plan             `json:"plan,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Fork starts this workflow from another's checkpoint revision: its
	// plan, and the outputs of the tasks completed by then.
	Fork *ForkOf `json:"fork,omitempty"`
	// TimeoutMS bounds the whole workflow: past it, it fails with code
	// "timeout" and its running steps are canceled.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Priority orders the workflow's steps among its tenant's queued
	// steps when flow control holds them: PriorityHighest first; 0 is
	// PriorityDefault.
	Priority int `json:"priority,omitempty"`
	// Budget bounds what the workflow may spend on models.
	Budget *Budget `json:"budget,omitempty"`
	// SessionID makes the workflow a turn of a conversation (A2A's
	// contextId): earlier turns reach its steps as Conversation, and its
	// answer is kept as the session's next turn. A subject token.
	SessionID string `json:"session_id,omitempty"`
	// User names whom the workflow runs for, when the gateway's token
	// names one: memory and sessions are kept per user. A subject token.
	User string `json:"user,omitempty"`
	// Role is the role of the gateway token that submitted the workflow
	// (client, admin): the tool permissions table applies the tenant's
	// rules for it. Set by the gateway, never taken from a request body;
	// a NATS submitter is trusted with it as with User. A subject token.
	Role string `json:"role,omitempty"`
	// Concurrency limits how many of the tenant's workflows with its key
	// run at once.
	Concurrency *Concurrency `json:"concurrency,omitempty"`
	// DoubleText is a session turn's policy toward a turn of the session
	// still running (DoubleTextReject …): the concurrency key
	// "session:<SessionID>" with limit 1. Empty: none.
	DoubleText string `json:"double_text,omitempty"`
}

// MetadataSearchOptions is the submission metadata key whose value, a
// JSON object of search step input fields (schema agent.search.input:
// k, profiles, filters, ensemble, max_per_doc), the orchestrator merges
// into the input of every search step it plans for the query. A2A data
// parts such as {"top_k": 20} arrive this way.
const MetadataSearchOptions = "search_options"

// Priorities of a workflow's steps among its tenant's queued steps.
const (
	PriorityLowest  = 1
	PriorityDefault = 3
	PriorityHighest = 5
)

// Deadline is the data of TypeDeadline.
type Deadline struct {
	At time.Time `json:"at"`
}

// ForkOf names the checkpoint a forked workflow starts from.
type ForkOf struct {
	WorkflowID string `json:"workflow_id"`
	Revision   uint64 `json:"revision"`
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
	TimeoutMS         int64                      `json:"timeout_ms,omitempty"`
	// Conversation is the session this workflow is a turn of, if any.
	Conversation *Conversation `json:"conversation,omitempty"`
	// Problems lists the workflow's steps that failed (optional ones) or
	// were skipped before this step was requested, so that an answer can
	// say what it lacks.
	Problems []StepProblem `json:"problems,omitempty"`
	// User is the submission's user, if any.
	User string `json:"user,omitempty"`
	// Role is the submission's role, if any (WorkflowSubmitted.Role).
	Role string `json:"role,omitempty"`
}

// StepCompleted is the data of TypeStepCompleted.
type StepCompleted struct {
	StepID     string          `json:"step_id"`
	Capability string          `json:"capability"`
	Attempt    int             `json:"attempt"`
	Output     json.RawMessage `json:"output"`
	Worker     string          `json:"worker,omitempty"`
	DurationMS float64         `json:"duration_ms,omitempty"`
	// QueuedMS is how long the step waited between its request's publish
	// (its ce-time) and this worker starting it; DurationMS is its run.
	QueuedMS float64 `json:"queued_ms,omitempty"`
	// Usage is what the step spent on models, when it called any.
	Usage *Usage `json:"usage,omitempty"`
}

// StepFailed is the data of TypeStepFailed.
type StepFailed struct {
	StepID     string `json:"step_id"`
	Capability string `json:"capability"`
	Attempt    int    `json:"attempt"`
	Error      string `json:"error"`
	Retryable  bool   `json:"retryable,omitempty"`
	Worker     string `json:"worker,omitempty"`
	// QueuedMS and DurationMS, when the worker ran the step: its wait in
	// the queue and its run, as in StepCompleted.
	QueuedMS   float64 `json:"queued_ms,omitempty"`
	DurationMS float64 `json:"duration_ms,omitempty"`
	// Usage is what its last run spent on models, when it called any.
	Usage *Usage `json:"usage,omitempty"`
}

// StepRunning is the data of TypeStepRunning.
type StepRunning struct {
	StepID     string `json:"step_id"`
	Capability string `json:"capability"`
	Attempt    int    `json:"attempt"`
	Worker     string `json:"worker,omitempty"`
}

// Control actions.
const (
	ActionCancel  = "cancel"
	ActionResume  = "resume"
	ActionApprove = "approve"
	ActionReject  = "reject"
	// ActionSignal sends the workflow a named signal (Control.Signal),
	// whose data (Control.Data) becomes the output of the wait step that
	// waits for it; a signal no step waits for yet is kept for one.
	ActionSignal = "signal"
	// ActionPause stops a workflow dispatching: its running steps finish
	// and are recorded, its ready steps wait. ActionUnpause undoes it.
	ActionPause   = "pause"
	ActionUnpause = "unpause"
)

// Actions lists every control action, in the order they are documented.
func Actions() []string {
	return []string{ActionCancel, ActionResume, ActionApprove, ActionReject, ActionSignal, ActionPause, ActionUnpause}
}

// Control is the data of TypeControl: cancel a workflow, resume a failed
// one, approve / reject a step that awaits a decision, send it a signal,
// or pause and unpause it.
type Control struct {
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
	// StepID names the step an approve/reject decides; empty means every
	// step awaiting a decision.
	StepID string `json:"step_id,omitempty"`
	// Signal names the signal of ActionSignal, and Data is its body (any
	// JSON; null when absent).
	Signal string          `json:"signal,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
}

// ControlRecord is the value of a workflow's key ("<tenant>.<workflow>")
// in KV AGENTBUS_CONTROL. It survives restarts, so that a step redelivered
// after a cancel is never run.
type ControlRecord struct {
	Canceled bool      `json:"canceled"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// ControlResult answers a control request.
type ControlResult struct {
	WorkflowID string `json:"workflow_id"`
	Status     State  `json:"status"`
	// Applied is false when the action did not apply (e.g. cancel of a
	// finished workflow); Message says why.
	Applied bool   `json:"applied"`
	Message string `json:"message"`
}

// Status is the data of TypeStatus: the workflow's state (StepID empty) or a step's.
type Status struct {
	State   State  `json:"state"`
	StepID  string `json:"step_id,omitempty"`
	Message string `json:"message,omitempty"`
	// TraceID is the workflow's OpenTelemetry trace id, on its first
	// status event, so that a client can jump to the trace.
	TraceID string `json:"trace_id,omitempty"`
	// Recovery, when set, says the orchestrator's reconciler moved the
	// workflow on after the server lost or held something (Recovery*).
	Recovery string `json:"recovery,omitempty"`
	// Confirm, on a step's input-required status, says the step waits
	// for a confirmation before it runs, and with what input.
	Confirm *Confirmation `json:"confirm,omitempty"`
	// CompletedSteps and TotalSteps, on the status of a step that has
	// just finished (completed, an optional step failed, awaiting its
	// approval), say how many of the workflow's steps have finished: its
	// progress. The orchestrator sent them as a progress event of their
	// own after each step until November 2026; a progress event now comes only from
	// an agent reporting its step's progress, or from flow control.
	CompletedSteps int `json:"completed_steps,omitempty"`
	TotalSteps     int `json:"total_steps,omitempty"`
	// Artifact, on the status of a step that has just completed (or
	// awaits its approval), is the step's output as an artifact (its
	// StepID left out: the status has it). A step's result comes with its
	// completion, as Temporal's and Hatchet's completion events carry
	// theirs; until November 2026 it came as an artifact event of its
	// own just before this status. Artifact events now come from agents
	// only (chunks, files): a client collecting artifacts reads both.
	Artifact *Artifact `json:"artifact,omitempty"`
}

// Confirmation is what a step that waits to be confirmed before it runs
// (a requires_confirmation tool permission) shows whoever decides: its
// capability, the rule, and the input it would run with.
type Confirmation struct {
	Capability string          `json:"capability"`
	Rule       string          `json:"rule"`
	Input      json.RawMessage `json:"input,omitempty"`
}

// Recoveries: what the reconciler did, on a status event's Recovery.
const (
	// RecoverySubmission: a stored submission no orchestrator had started
	// within the bound was started from the stream.
	RecoverySubmission = "submission"
	// RecoveryStepDown: a step's request held delivered and unacknowledged
	// without redelivery made its consumer's leader step down.
	RecoveryStepDown = "stepdown"
	// RecoveryRedispatch: a step's request still held after the stepdown
	// was deleted and the step dispatched again as a new attempt; replies
	// of the old attempt no longer count.
	RecoveryRedispatch = "redispatch"
	// RecoveryLost: a step's request and reply were both gone (a server
	// lost them) and the step was dispatched again.
	RecoveryLost = "lost"
)

// Progress is the data of TypeProgress.
type Progress struct {
	CompletedSteps int     `json:"completed_steps"`
	TotalSteps     int     `json:"total_steps"`
	Percent        float64 `json:"percent"`
	StepID         string  `json:"step_id,omitempty"`
	Message        string  `json:"message,omitempty"`
	// ThrottledUntil, when set, says the step waits for its tenant's limit
	// on its capability (flow control) until about then; it is not failed
	// for it.
	ThrottledUntil *time.Time `json:"throttled_until,omitempty"`
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
	// CodeInvalidInput: a step's input does not fit the input schema its
	// capability's agent registered.
	CodeInvalidInput = "invalid_input"
	CodeCycle        = "cycle"
	CodeStepFailed   = "step_failed"
	CodeRejected     = "rejected"
	CodeTimeout      = "timeout"
	// CodePermissionDenied: a step's capability is refused by the tool
	// permissions table for the workflow's tenant and role (Error.Rule).
	CodePermissionDenied = "permission_denied"
)

// Error is the data of TypeError, the terminal event of a failed workflow.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	StepID  string `json:"step_id,omitempty"`
	Pointer string `json:"pointer,omitempty"`
	// Rule is the tool permissions rule that refused the step (code
	// permission_denied).
	Rule string `json:"rule,omitempty"`
}

// Complete is the data of TypeComplete: every step's output by step id, and
// the result (the output of the plan's sink steps).
type Complete struct {
	Result  json.RawMessage            `json:"result"`
	Outputs map[string]json.RawMessage `json:"outputs"`
	// Partial is set when optional steps failed: their outputs are null.
	Partial    bool    `json:"partial,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	// Usage is what the workflow's steps spent on models, when they
	// called any.
	Usage *Usage `json:"usage,omitempty"`
	PhaseLatency
}

// PhaseLatency is where a workflow's time went, in milliseconds: planning
// (submission handled → first dispatch), the steps' waits in the queue
// (their sum and the longest), action (first dispatch → last step
// finished) and end to end (submission handled → completion). It travels
// in the complete event and in the workflow's state.
type PhaseLatency struct {
	PlanningMS float64 `json:"planning_ms"`
	QueueMS    float64 `json:"queue_ms"`
	QueueMaxMS float64 `json:"queue_max_ms"`
	ActionMS   float64 `json:"action_ms"`
	EndToEndMS float64 `json:"end_to_end_ms"`
	// Steps holds each step's wait and run (the complete event only: the
	// state carries them on its tasks).
	Steps map[string]StepLatency `json:"steps,omitempty"`
}

// StepLatency is one step's time in the queue and running, in
// milliseconds, of its attempt that counted.
type StepLatency struct {
	QueuedMS float64 `json:"queued_ms"`
	RunMS    float64 `json:"run_ms"`
}

// Cancelled is the data of TypeCancelled.
type Cancelled struct {
	Reason string `json:"reason,omitempty"`
}
