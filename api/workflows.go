package api

import (
	"encoding/json"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// SubmitRequest is the body of POST /v1/workflows (schema
// workflow.request): a query the orchestrator plans, an explicit plan, or
// both (the plan wins; the query is kept for context). It is plain data,
// safe to share.
type SubmitRequest struct {
	WorkflowID string            `json:"workflow_id,omitempty"`
	Query      string            `json:"query,omitempty"`
	Plan       *events.Plan      `json:"plan,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	TimeoutMS  int64             `json:"timeout_ms,omitempty"`
	// Priority (1–5, default 3) orders the workflow's steps among its
	// tenant's steps waiting for a busy capability: 5 first.
	Priority int `json:"priority,omitempty"`
	// Budget bounds what the workflow may spend on models (tokens); past
	// it, the steps not yet run pause for a decision or the workflow
	// fails (on_exceed).
	Budget *events.Budget `json:"budget,omitempty"`
	// SessionID makes the workflow a turn of that conversation (started
	// if new): see GET /v1/sessions/{id}.
	SessionID string `json:"session_id,omitempty"`
	// Concurrency limits how many of the tenant's workflows with its key
	// run at once, and says what this one does at the limit.
	Concurrency *events.Concurrency `json:"concurrency,omitempty"`
	// DoubleText is what this turn of SessionID does while another turn
	// of it runs: reject, enqueue, interrupt or rollback.
	DoubleText string `json:"double_text,omitempty"`
}

// Submitted is the workflow.submitted payload the request asks for. Whom
// it runs for (User) and what it forks (Fork) are not the body's to say:
// the caller sets them.
func (r SubmitRequest) Submitted() events.WorkflowSubmitted {
	return events.WorkflowSubmitted{Query: r.Query, Plan: r.Plan, Metadata: r.Metadata, TimeoutMS: r.TimeoutMS,
		Priority: r.Priority, Budget: r.Budget, SessionID: r.SessionID,
		Concurrency: r.Concurrency, DoubleText: r.DoubleText}
}

// The Status of a SubmitResponse.
const (
	// StatusAccepted: an orchestrator recorded the workflow.
	StatusAccepted = "accepted"
	// StatusQueued: the submission is stored, and no orchestrator recorded
	// it yet; it runs when one can.
	StatusQueued = "queued"
)

// SubmitResponse is the answer to POST /v1/workflows (and to a fork, and
// what Submit returns). It is plain data, safe to share.
type SubmitResponse struct {
	WorkflowID string `json:"workflow_id"`
	TenantID   string `json:"tenant_id"`
	// Status is "accepted" once an orchestrator recorded the workflow, or
	// "queued" if none did within the accept timeout.
	Status string `json:"status"`
	// EventsURL streams the workflow's events (SSE); StateURL is its state.
	EventsURL string `json:"events_url"`
	StateURL  string `json:"state_url"`
	// EventsSubject is where NATS clients can follow the same events.
	EventsSubject string `json:"events_subject"`
	// Replayed says that the answer is an earlier submission's, sent with
	// the same idempotency key (SubmitOnce): no new workflow was started.
	// It is no part of the body: over HTTP the header ReplayedHeader says
	// it.
	Replayed bool `json:"-"`
}

// ForkRequest is the body of POST /v1/workflows/{id}/fork (schema
// fork.request): the checkpoint revision to start from, and the new
// workflow's id (empty: the gateway picks). It is plain data, safe to
// share.
type ForkRequest struct {
	Revision   uint64 `json:"revision"`
	WorkflowID string `json:"workflow_id,omitempty"`
}

// ControlRequest is the body of POST …/cancel, …/resume and …/approve
// (schema control.request); every field is optional. The answer is an
// events.ControlResult. It is plain data, safe to share.
type ControlRequest struct {
	Reason  string `json:"reason,omitempty"`
	Comment string `json:"comment,omitempty"`
	// Approve decides an approval: true approves (the default), false rejects.
	Approve *bool  `json:"approve,omitempty"`
	StepID  string `json:"step_id,omitempty"`
}

// Control is the control message the request asks for with action (an
// events.Action…, the last segment of its path): a comment is the reason
// when there is one, and approve with Approve false is a rejection.
func (r ControlRequest) Control(action string) events.Control {
	c := events.Control{Action: action, Reason: r.Reason, StepID: r.StepID}
	if r.Comment != "" {
		c.Reason = r.Comment
	}
	if action == events.ActionApprove && r.Approve != nil && !*r.Approve {
		c.Action = events.ActionReject
	}
	return c
}

// Revision is one kept checkpoint revision of a workflow, as GET
// /v1/workflows/{id}/checkpoints lists them under "revisions": the KV
// revision (what a fork takes), "superseded" or the workflow's status then
// (workflow.RevisionStatus), and the checkpoint without its outbox. It is
// plain data, safe to share.
type Revision struct {
	Revision   uint64          `json:"revision"`
	Status     string          `json:"checkpoint_status"`
	Checkpoint json.RawMessage `json:"checkpoint"`
}

// State decodes the revision's checkpoint.
func (r Revision) State() (workflow.Checkpoint, error) {
	var s workflow.Checkpoint
	err := json.Unmarshal(r.Checkpoint, &s)
	return s, err
}
