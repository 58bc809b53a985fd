package events

import (
	"encoding/json"
	"time"
)

// Conversation is what a step of a session's turn knows of the session:
// its id, the earlier turns (oldest first, the latest few in full), a
// rolling summary of the turns before those, and the query as the user
// typed it when the orchestrator resolved a follow-up against earlier
// turns (the workflow's query is then the resolved one).
type Conversation struct {
	SessionID     string `json:"session_id"`
	History       []Turn `json:"conversation_history,omitempty"`
	Summary       string `json:"summary,omitempty"`
	OriginalQuery string `json:"original_query,omitempty"`
}

// Turn is one finished workflow of a session: what was asked and what
// was answered, with the answer's citations as the composer gave them.
type Turn struct {
	N          int    `json:"n"`
	WorkflowID string `json:"workflow_id"`
	Query      string `json:"query"`
	// ResolvedQuery is the query as searched, when it differs from Query
	// (a follow-up resolved against earlier turns).
	ResolvedQuery string          `json:"resolved_query,omitempty"`
	Answer        string          `json:"answer,omitempty"`
	Citations     json.RawMessage `json:"citations,omitempty"`
	// Status is the workflow's final state (completed, failed, canceled).
	Status State     `json:"status"`
	At     time.Time `json:"at"`
}

// ProblemFailed is the kind of a StepProblem for a step that failed.
const ProblemFailed = "failed"

// StepProblem is a step of the workflow that did not give an output: an
// optional step that failed after its retries.
type StepProblem struct {
	StepID     string `json:"step_id"`
	Capability string `json:"capability"`
	// Kind is ProblemFailed.
	Kind  string `json:"kind"`
	Error string `json:"error,omitempty"`
}
