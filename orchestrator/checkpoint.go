package orchestrator

import (
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// Checkpoint is a workflow's whole state, stored as JSON in KV
// AGENTBUS_CHECKPOINTS under "<tenant>.<workflow>". Every revision is a
// consistent snapshot.
type Checkpoint struct {
	TenantID   string           `json:"tenant_id"`
	WorkflowID string           `json:"workflow_id"`
	Query      string           `json:"query,omitempty"`
	Status     events.State     `json:"status"`
	Plan       events.Plan      `json:"plan"`
	Stages     [][]string       `json:"stages,omitempty"`
	Tasks      map[string]*Task `json:"tasks"`
	Result     json.RawMessage  `json:"result,omitempty"`
	Error      *events.Error    `json:"error,omitempty"`
	CreatedAt  time.Time        `json:"created_at"`
	UpdatedAt  time.Time        `json:"updated_at"`
	// Phase is where the workflow is: planning, executing,
	// awaiting_approval or done.
	Phase string `json:"phase"`
	// ExecutionOrder lists steps in the order they finished.
	ExecutionOrder []string `json:"execution_order,omitempty"`
	// ResumeCount counts resumptions: explicit resumes of a failed
	// workflow, and transitions that found an earlier one interrupted by a
	// crash and finished it.
	ResumeCount int `json:"resume_count"`
	// Parent is the checkpoint a forked workflow started from.
	Parent *events.ForkOf `json:"parent,omitempty"`
	// Metadata is the submission's metadata (e.g. an A2A context id).
	Metadata map[string]string `json:"metadata,omitempty"`
	// User is whom the workflow runs for (from the gateway's token), passed
	// to every step; Session is the conversation it is a turn of
	// (session.go).
	User    string        `json:"user,omitempty"`
	Session *SessionState `json:"session,omitempty"`
	// Deadline, if set, is when the workflow fails with code "timeout".
	Deadline *time.Time `json:"deadline,omitempty"`
	// Canceled says why the workflow was canceled.
	Canceled string `json:"canceled,omitempty"`
	// EventCount is how many client events the workflow has emitted; the
	// next one gets dedup key EventKey(…, EventCount).
	EventCount int `json:"event_count"`
	// Watch numbers the workflow's watchdog timers (lease.go): the live one
	// is the Watch-th, armed at the first dispatch and again at each resume.
	Watch int `json:"watch,omitempty"`
	// Outbox holds messages decided by the last transition and not yet known
	// to be published.
	Outbox []Outgoing `json:"outbox,omitempty"`
	// TraceID is the workflow's OpenTelemetry trace id and TraceParent the
	// W3C context of its root span ("workflow submit"): every span of the
	// workflow, made by whichever process, descends from it (trace.go).
	TraceID     string `json:"trace_id,omitempty"`
	TraceParent string `json:"trace_parent,omitempty"`
	// spans were started by the transition under way and end once its
	// checkpoint is stored.
	spans []trace.Span
	// PhaseLatency is where the time went (planning_ms, queue_ms,
	// queue_max_ms, action_ms, end_to_end_ms): set once planned, brought up
	// to date as steps finish, final at completion (latency.go).
	*events.PhaseLatency
}

// Task is one step's state within a checkpoint.
type Task struct {
	Capability string          `json:"capability"`
	Status     events.State    `json:"status"`
	Attempt    int             `json:"attempt"`
	Output     json.RawMessage `json:"output,omitempty"`
	Error      string          `json:"error,omitempty"`
	Worker     string          `json:"worker,omitempty"`
	// Approval is set for steps that require one: pending, approved,
	// auto-approved or rejected, with the comment or the confidence.
	Approval *Approval `json:"approval,omitempty"`
	// FellBack names the fallback capability used after a failure.
	FellBack     string     `json:"fell_back,omitempty"`
	DispatchedAt *time.Time `json:"dispatched_at,omitempty"`
	CompletedAt  *time.Time `json:"completed_at,omitempty"`
	// Since is the first attempt whose reply still counts: the attempt of
	// the last dispatch by the plan (first run, fallback, resume). A
	// dispatch by the watchdog keeps it, so that the reply of an attempt
	// thought lost, should it come after all, is recorded (once).
	Since int `json:"since,omitempty"`
	// StepSeq is where the live attempt's request is stored in
	// AGENTBUS_STEPS, known once its publish was acknowledged: the
	// watchdog's way to ask whether it is still queued or running.
	StepSeq uint64 `json:"step_seq,omitempty"`
	// HeldSince is when the watchdog first saw the live attempt's request
	// held by its consumer (delivered, not acknowledged) at a due lease;
	// SteppedDownAt when it stepped that consumer's leader down
	// (recover.go). Both are cleared by the next dispatch.
	HeldSince     *time.Time `json:"held_since,omitempty"`
	SteppedDownAt *time.Time `json:"stepped_down_at,omitempty"`
	// TraceParent is the W3C context of the live attempt's dispatch span,
	// the parent of its run on a worker and of its approval wait.
	TraceParent string `json:"trace_parent,omitempty"`
	// QueuedMS and RunMS are the recorded attempt's wait in the queue and
	// run on its worker, as the worker reported them.
	QueuedMS float64 `json:"queued_ms,omitempty"`
	RunMS    float64 `json:"run_ms,omitempty"`
}

// Approval states.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalAuto     = "auto-approved"
	ApprovalRejected = "rejected"
)

// Approval is a step's human decision.
type Approval struct {
	State      string   `json:"state"`
	Comment    string   `json:"comment,omitempty"`
	Confidence *float64 `json:"confidence,omitempty"`
}

// Phases of a workflow.
const (
	PhasePlanning  = "planning"
	PhaseExecuting = "executing"
	PhaseAwaiting  = "awaiting_approval"
	PhaseDone      = "done"
)

// Outgoing is one message in a checkpoint's outbox.
type Outgoing struct {
	Subject string          `json:"subject"`
	MsgID   string          `json:"msg_id"`
	Type    events.Type     `json:"type"`
	StepID  string          `json:"step_id,omitempty"`
	Time    time.Time       `json:"time"`
	Data    json.RawMessage `json:"data"`
	// At and Target, when set, schedule the message: the server holds it
	// on Subject and publishes it on Target at At (a watchdog timer).
	At     *time.Time `json:"at,omitempty"`
	Target string     `json:"target,omitempty"`
	// TraceParent is the message's ce-traceparent; default the
	// workflow's.
	TraceParent string `json:"trace_parent,omitempty"`
}

func newCheckpoint(tenant, workflow, query string, now time.Time) *Checkpoint {
	return &Checkpoint{
		TenantID: tenant, WorkflowID: workflow, Query: query, Status: events.StateSubmitted,
		Tasks: map[string]*Task{}, CreatedAt: now, UpdatedAt: now, Phase: PhasePlanning,
	}
}

// emit queues a client event.
func (cp *Checkpoint) emit(typ events.Type, step string, payload any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	subj, err := subjects.Events(cp.TenantID, cp.WorkflowID)
	if err != nil {
		return err
	}
	cp.Outbox = append(cp.Outbox, Outgoing{
		Subject: subj, MsgID: events.EventKey(cp.TenantID, cp.WorkflowID, cp.EventCount),
		Type: typ, StepID: step, Time: time.Now().UTC(), Data: data,
	})
	cp.EventCount++
	return nil
}

// planStep returns the plan's definition of a step.
func (cp *Checkpoint) planStep(id string) (events.PlanStep, bool) { return planStepOf(cp.Plan, id) }

// fail ends the workflow with an error event.
func (cp *Checkpoint) fail(e events.Error) error {
	cp.Status, cp.Phase = events.StateFailed, PhaseDone
	cp.Error = &e
	if err := cp.emit(events.TypeStatus, "", events.Status{State: events.StateFailed, Message: e.Message}); err != nil {
		return err
	}
	return cp.emit(events.TypeError, e.StepID, e)
}

// RevisionStatus is how a kept checkpoint revision reads in a workflow's
// history: "superseded" unless it is the newest, which is "completed",
// "failed" (failed, rejected or canceled) or "active" by the workflow's
// status then.
func RevisionStatus(newest bool, s events.State) string {
	switch {
	case !newest:
		return "superseded"
	case s == events.StateCompleted:
		return "completed"
	case s.Terminal():
		return "failed"
	}
	return "active"
}
