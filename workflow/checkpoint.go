package workflow

import (
	"encoding/json"
	"time"

	"github.com/agentbus/agentbus/events"
)

// Checkpoint is a workflow's whole state, stored as JSON in KV
// AGENTBUS_CHECKPOINTS under "<tenant>.<workflow>". Every revision is a
// consistent snapshot. A Checkpoint is a value owned by whoever decoded
// it; it is not safe for concurrent use.
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
	// Phase is where the workflow is: planning, waiting, executing,
	// awaiting_approval, paused or done.
	Phase Phase `json:"phase"`
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
	// to every step; Session is the conversation it is a turn of.
	User    string        `json:"user,omitempty"`
	Session *SessionState `json:"session,omitempty"`
	// Role is the role of the token that submitted the workflow, passed to
	// every step (a tool-calling agent's child workflows carry it on).
	Role string `json:"role,omitempty"`
	// Priority (1–5) orders the workflow's steps among its tenant's
	// steps waiting for a busy capability; 0 reads as
	// events.PriorityDefault.
	Priority int `json:"priority,omitempty"`
	// Budget, if set, bounds what the workflow may spend on models; Usage
	// is what its steps' replies said they spent. BudgetHeld says the
	// steps not yet run wait for a decision because the budget is used up;
	// BudgetLifted that a decision let them go on without it.
	Budget       *events.Budget `json:"budget,omitempty"`
	Usage        events.Usage   `json:"usage,omitempty"`
	BudgetHeld   bool           `json:"budget_held,omitempty"`
	BudgetLifted bool           `json:"budget_lifted,omitempty"`
	// Concurrency, if set, is the concurrency key the workflow holds or
	// waits for (phase waiting): the orchestrator releases it when the
	// workflow ends.
	Concurrency *events.Concurrency `json:"concurrency,omitempty"`
	// Deadline, if set, is when the workflow fails with code "timeout".
	Deadline *time.Time `json:"deadline,omitempty"`
	// Paused says the workflow dispatches nothing new until it is
	// unpaused (pause.go), PauseReason why.
	Paused      bool   `json:"paused,omitempty"`
	PauseReason string `json:"pause_reason,omitempty"`
	// Signals holds, by name, the signals received that no wait step
	// waited for yet, oldest first (at most MaxSignals of a name).
	Signals map[string][]KeptSignal `json:"signals,omitempty"`
	// Canceled says why the workflow was canceled.
	Canceled string `json:"canceled,omitempty"`
	// EventCount is how many client events the workflow has emitted; the
	// next one gets dedup key events.EventKey(…, EventCount).
	EventCount int `json:"event_count"`
	// Watch numbers the workflow's watchdog timers: the live one is the
	// Watch-th, armed at the first dispatch and again at each resume.
	Watch int `json:"watch,omitempty"`
	// Outbox holds messages decided by the last transition and not yet known
	// to be published (the orchestrator's outbox; Apply never reads it).
	Outbox []Outgoing `json:"outbox,omitempty"`
	// TraceID is the workflow's OpenTelemetry trace id and TraceParent the
	// W3C context of its root span ("workflow submit"): every span of the
	// workflow, made by whichever process, descends from it.
	TraceID     string `json:"trace_id,omitempty"`
	TraceParent string `json:"trace_parent,omitempty"`
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
	// Confirm, when set, is the tool permissions rule by which the step
	// waits for a confirmation before its first dispatch (Planned.Confirm).
	Confirm string `json:"confirm,omitempty"`
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
	// SteppedDownAt when it stepped that consumer's leader down. Both are
	// cleared by the next dispatch.
	HeldSince     *time.Time `json:"held_since,omitempty"`
	SteppedDownAt *time.Time `json:"stepped_down_at,omitempty"`
	// RenewedAt is when the worker running the live attempt, handed to it
	// with a verdict (eager dispatch), last said it still runs it: the
	// lease runs from then. Cleared by the next dispatch.
	RenewedAt *time.Time `json:"renewed_at,omitempty"`
	// HandedWith is the id (ce-id) of the answer whose verdict carried
	// the live attempt's request back to its worker (eager dispatch);
	// cleared by the next dispatch.
	HandedWith string `json:"handed_with,omitempty"`
	// HandedLeaseMS is how long the worker the live attempt was handed to
	// may go without a word (its offer's lease, bus.Offer.Lease: its
	// AckWait): the attempt's lease instead of the watchdog's StepLease.
	// Zero when it did not say. Cleared by the next dispatch.
	HandedLeaseMS int64 `json:"handed_lease_ms,omitempty"`
	// TraceParent is the W3C context of the live attempt's dispatch span,
	// the parent of its run on a worker and of its approval wait.
	TraceParent string `json:"trace_parent,omitempty"`
	// QueuedMS and RunMS are the recorded attempt's wait in the queue and
	// run on its worker, as the worker reported them.
	QueuedMS float64 `json:"queued_ms,omitempty"`
	RunMS    float64 `json:"run_ms,omitempty"`
	// Wait is a wait step's wait, once started (wait.go).
	Wait *WaitState `json:"wait,omitempty"`
}

// Approval states.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalAuto     = "auto-approved"
	ApprovalRejected = "rejected"
)

// Approval is a step's human decision: on its result (RequiresApproval),
// or, with BeforeDispatch, on whether it runs at all (Task.Confirm).
type Approval struct {
	State      string   `json:"state"`
	Comment    string   `json:"comment,omitempty"`
	Confidence *float64 `json:"confidence,omitempty"`
	// BeforeDispatch says the decision is asked before the step runs: an
	// approval dispatches it, a rejection ends the workflow unrun.
	BeforeDispatch bool `json:"before_dispatch,omitempty"`
}

// Phase is where a workflow is, a coarser view of its status.
type Phase string

// Phases of a workflow.
const (
	PhasePlanning  Phase = "planning"
	PhaseWaiting   Phase = "waiting" // planned, waiting for a slot of its concurrency key
	PhaseExecuting Phase = "executing"
	PhaseAwaiting  Phase = "awaiting_approval"
	PhasePaused    Phase = "paused" // working or input-required, dispatching nothing new (pause.go)
	PhaseDone      Phase = "done"
)

// String returns the phase's name.
func (p Phase) String() string { return string(p) }

// Outgoing is one message an effect asks to publish; the orchestrator keeps
// a transition's in the checkpoint's outbox until they are published.
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
	// Handed marks a step request given to the worker whose answer the
	// transition recorded, with its verdict, instead of published
	// (Temporal's eager dispatch): nobody publishes it, and if that worker
	// never runs it the step's lease finds it lost and dispatches it again.
	Handed bool `json:"handed,omitempty"`
}

// SessionState is what a workflow that is a turn of a conversation keeps
// in its checkpoint: the conversation its every step request carries, and
// whether its final turn is in the session.
type SessionState struct {
	ID string `json:"id"`
	// Conversation is the session as it was when the workflow was
	// submitted (the newest turns in full and the summary), with the
	// query as typed when it was resolved into another.
	Conversation events.Conversation `json:"conversation"`
	// Resolved says how a follow-up was resolved ("" if it was not).
	Resolved string `json:"resolved,omitempty"`
	// Recorded is the workflow's state whose turn is in the session: set
	// when it ends and its turn was appended.
	Recorded events.State `json:"recorded,omitempty"`
	// Dropped says the turn is not kept in the session: the workflow was
	// canceled by a newer turn's double-text rollback.
	Dropped bool `json:"dropped,omitempty"`
}

// Revision is one stored revision of a workflow's checkpoint.
type Revision struct {
	Revision   uint64      `json:"revision"`
	Checkpoint *Checkpoint `json:"checkpoint"`
}

// Start is what a new workflow begins with, before it is planned.
type Start struct {
	TenantID, WorkflowID, Query string
	Metadata                    map[string]string
	Priority                    int
	Budget                      *events.Budget
	User, Role                  string
	Session                     *SessionState
	Concurrency                 *events.Concurrency
	// TraceParent is the W3C context of the workflow's root span.
	TraceParent, TraceID string
}

// New returns the checkpoint of a workflow submitted at now, in phase
// planning: the state Planned, Forked and Malformed apply to.
func New(s Start, now time.Time) *Checkpoint {
	now = Clock(now)
	return &Checkpoint{
		TenantID: s.TenantID, WorkflowID: s.WorkflowID, Query: s.Query, Status: events.StateSubmitted,
		Tasks: map[string]*Task{}, CreatedAt: now, UpdatedAt: now, Phase: PhasePlanning,
		Metadata: s.Metadata, Priority: s.Priority, Budget: s.Budget, User: s.User, Role: s.Role, Session: s.Session, Concurrency: s.Concurrency, TraceParent: s.TraceParent, TraceID: s.TraceID,
	}
}

// PlanStep returns the plan's definition of a step.
func (cp *Checkpoint) PlanStep(id string) (events.PlanStep, bool) { return PlanStepOf(cp.Plan, id) }

// Settled reports whether a task no longer holds up its dependents: it
// completed (and, if it needed one, got its approval), or it was optional
// and failed.
func (cp *Checkpoint) Settled(id string) bool {
	t := cp.Tasks[id]
	if t == nil {
		return false
	}
	if t.Status == events.StateCompleted {
		return true
	}
	s, _ := cp.PlanStep(id)
	return t.Status == events.StateFailed && s.Optional
}

// Inputs returns the outputs of a step's dependencies (null for an
// optional one that failed), and whether they have all settled.
func (cp *Checkpoint) Inputs(s events.PlanStep) (map[string]json.RawMessage, bool) {
	deps := make(map[string]json.RawMessage, len(s.DependsOn))
	for _, d := range s.DependsOn {
		if !cp.Settled(d) {
			return nil, false
		}
		deps[d] = cp.Tasks[d].Output
		if deps[d] == nil {
			deps[d] = json.RawMessage("null")
		}
	}
	return deps, true
}

// Problems lists, in plan order, the steps that settled without an
// output: optional steps that failed after their retries (a failed
// required step, or a rejected one, ends the workflow, so no later step
// hears of it). Every step request carries them, so that an answer can
// say what it had to do without.
func (cp *Checkpoint) Problems() []events.StepProblem {
	var out []events.StepProblem
	for _, s := range cp.Plan.Steps {
		if t := cp.Tasks[s.ID]; t != nil && t.Status == events.StateFailed {
			out = append(out, events.StepProblem{StepID: s.ID, Capability: t.Capability, Kind: events.ProblemFailed, Error: t.Error})
		}
	}
	return out
}

// Conversation is what the workflow's step requests carry of its session.
func (cp *Checkpoint) Conversation() *events.Conversation {
	if cp.Session == nil {
		return nil
	}
	c := cp.Session.Conversation
	return &c
}

// Awaiting lists the steps whose approval is pending.
func (cp *Checkpoint) Awaiting() []string {
	var ids []string
	for id, t := range cp.Tasks {
		if t.Approval != nil && t.Approval.State == ApprovalPending {
			ids = append(ids, id)
		}
	}
	return ids
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

// StepArtifactID is the artifact id of a step's output: "<step>.output".
func StepArtifactID(step string) string { return step + ".output" }

// EffectivePriority is the workflow's priority, its default when unset or
// out of range.
func (cp *Checkpoint) EffectivePriority() int {
	if cp.Priority < events.PriorityLowest || cp.Priority > events.PriorityHighest {
		return events.PriorityDefault
	}
	return cp.Priority
}

// OverBudget reports whether the workflow has spent its budget (and no
// decision lifted it).
func (cp *Checkpoint) OverBudget() bool {
	return cp.Budget != nil && cp.Budget.Tokens > 0 && !cp.BudgetLifted && cp.Usage.Tokens() >= cp.Budget.Tokens
}

// Clock is the time the engine keeps: UTC, to the microsecond, without
// a monotonic reading. Every timestamp of a checkpoint and its events
// comes from it; nanoseconds were three digits of noise in each, stored
// in every revision and event (ce-time).
func Clock(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
