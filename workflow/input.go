package workflow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/events"
)

// Input is something that happens to a workflow: Apply's second argument.
// Inputs are plain values; every one of them is listed below.
type Input interface {
	// Kind names the input for errors, logs and the transition table.
	Kind() Kind
}

// Kind is an input's kind.
type Kind int

// The kinds of input, one per Input type.
const (
	KindPlanned Kind = iota + 1
	KindForked
	KindMalformed
	KindCompleted
	KindFailed
	KindMalformedReply
	KindCancel
	KindApprove
	KindReject
	KindResume
	KindDeadline
	KindLost
	KindHeld
	KindSteppedDown
	KindAbandoned
	KindNote
	KindThrottled
	KindReleased
	KindSignal
	KindWaitDue
	KindPause
	KindUnpause
	KindRunning
)

var kindNames = map[Kind]string{
	KindPlanned: "planned", KindForked: "forked", KindMalformed: "malformed submission",
	KindCompleted: "step completed", KindFailed: "step failed", KindMalformedReply: "malformed reply",
	KindCancel: "cancel", KindApprove: "approve", KindReject: "reject", KindResume: "resume",
	KindDeadline: "deadline", KindLost: "step lost", KindHeld: "step held", KindSteppedDown: "consumer stepped down",
	KindAbandoned: "attempt abandoned", KindNote: "note", KindThrottled: "throttled",
	KindReleased: "released", KindSignal: "signal", KindWaitDue: "wait due", KindPause: "pause", KindUnpause: "unpause",
	KindRunning: "step running",
}

// Kinds lists every kind of input, in order.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kindNames))
	for k := KindPlanned; k <= KindRunning; k++ {
		out = append(out, k)
	}
	return out
}

// String returns the kind's name.
func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Planned is a new workflow's plan, from its submission or a planner.
// Refused, when set, says why the plan cannot run (an unknown capability);
// a plan whose structure is wrong (a cycle, an unknown dependency) is
// refused by Apply itself.
type Planned struct {
	Plan events.Plan
	// Note says how the plan came about (the planner's reasoning); it
	// ends the "planned" status message.
	Note string
	// TimeoutMS, if positive, bounds the whole workflow.
	TimeoutMS int64
	Refused   *PlanError
	// Confirm holds, by step id, the tool permissions rule by which a step
	// waits for a confirmation (Approve or Reject, showing its input)
	// before its first dispatch; a step not named runs when ready.
	Confirm map[string]string
	// Wait, when set, holds the planned workflow for a slot of its
	// concurrency key (events.ConcurrencyQueue): status submitted, phase
	// waiting, nothing dispatched until Released. It says why, in the
	// status event.
	Wait string
	// Cancel, when set, cancels the workflow as it is planned (its
	// concurrency key is at its limit, events.ConcurrencyCancelNewest):
	// the reason, in its cancelled event.
	Cancel string
}

// Forked starts a new workflow from a revision of another: Source is that
// revision (nil when it was not found, with Refused saying so).
type Forked struct {
	From    events.ForkOf
	Source  *Checkpoint
	Refused string
	// Confirm is Planned.Confirm for the steps the fork runs again.
	Confirm map[string]string
}

// Malformed ends a workflow whose submission could not be decoded.
type Malformed struct{ Error events.Error }

// Completed is a step's successful reply.
type Completed struct{ events.StepCompleted }

// Failed is a step's failure reply, after the worker's retries.
type Failed struct{ events.StepFailed }

// MalformedReply fails a step's live attempt whose reply could not be
// decoded.
type MalformedReply struct {
	StepID string
	Error  string
}

// Cancel cancels a workflow that has not ended. Rollback, for a session's
// turn, says its turn is not kept in the session (a double-text
// rollback by the turn that replaces it).
type Cancel struct {
	Reason   string
	Rollback bool
}

// Released starts a workflow that waits for a slot of its concurrency
// key (Planned.Wait): the slot is its now. Message says how it came.
type Released struct{ Message string }

// Kind implements Input.
func (Released) Kind() Kind { return KindReleased }

// Signal is a named signal sent to the workflow (the control action
// signal): the wait step waiting for it completes with Data as its
// output, or the workflow keeps it for the wait step that will. ID is the
// sender's message id: the same signal sent again is stale.
type Signal struct {
	Name string
	Data json.RawMessage
	ID   string
}

// Kind implements Input.
func (Signal) Kind() Kind { return KindSignal }

// WaitDue is a wait step's timer come due: a wait for a time completes, a
// wait for a signal times out.
type WaitDue struct {
	StepID  string
	Attempt int
}

// Kind implements Input.
func (WaitDue) Kind() Kind { return KindWaitDue }

// Pause stops a workflow dispatching (pause.go); Unpause lets it go on.
type Pause struct{ Reason string }

// Kind implements Input.
func (Pause) Kind() Kind { return KindPause }

// Unpause lets a paused workflow dispatch again.
type Unpause struct{ Reason string }

// Kind implements Input.
func (Unpause) Kind() Kind { return KindUnpause }

// Approve approves the step awaiting a decision (StepID, or every one).
type Approve struct{ StepID, Comment string }

// Reject rejects the step awaiting a decision, which ends the workflow.
type Reject struct{ StepID, Comment string }

// Resume dispatches a failed workflow's unfinished steps again.
type Resume struct{}

// Deadline is the workflow's deadline come due.
type Deadline struct{}

// Lost is the watchdog's verdict on a step attempt whose lease is due:
// neither its request nor a reply is stored any more.
type Lost struct {
	StepID  string
	Attempt int
}

// Held is the watchdog's first sight of a step attempt's request held by
// its consumer (delivered, not acknowledged) at a due lease.
type Held struct {
	StepID  string
	Attempt int
}

// Running is a worker's word that it still runs a step attempt handed to
// it with a verdict (eager dispatch): no stored request says so, and the
// lease is renewed from now (Task.RenewedAt).
type Running struct {
	StepID  string
	Attempt int
}

// SteppedDown records that the consumer holding a step attempt's request
// had its leader stepped down; Message says how that went.
type SteppedDown struct {
	StepID  string
	Attempt int
	Message string
}

// Abandoned gives up a step attempt whose request stayed held after the
// stepdown (and was deleted): the step runs again as a new attempt, and
// the old attempt's replies no longer count.
type Abandoned struct {
	StepID  string
	Attempt int
	Message string
}

// Note adds a status event to a live workflow (a recovery of the
// reconciler's), with its recovery kind.
type Note struct{ Message, Recovery string }

// Throttled says a step attempt waits in its capability's queue for its
// tenant's limit (in flight or rate) until about Until: a progress event
// for whoever follows the workflow. The step is not failed for it.
type Throttled struct {
	StepID  string
	Attempt int
	Until   time.Time
	Reason  string
}

// Kind implements Input.
func (Throttled) Kind() Kind { return KindThrottled }

// Kind implements Input.
func (Planned) Kind() Kind { return KindPlanned }

// Kind implements Input.
func (Forked) Kind() Kind { return KindForked }

// Kind implements Input.
func (Malformed) Kind() Kind { return KindMalformed }

// Kind implements Input.
func (Completed) Kind() Kind { return KindCompleted }

// Kind implements Input.
func (Failed) Kind() Kind { return KindFailed }

// Kind implements Input.
func (MalformedReply) Kind() Kind { return KindMalformedReply }

// Kind implements Input.
func (Cancel) Kind() Kind { return KindCancel }

// Kind implements Input.
func (Approve) Kind() Kind { return KindApprove }

// Kind implements Input.
func (Reject) Kind() Kind { return KindReject }

// Kind implements Input.
func (Resume) Kind() Kind { return KindResume }

// Kind implements Input.
func (Deadline) Kind() Kind { return KindDeadline }

// Kind implements Input.
func (Lost) Kind() Kind { return KindLost }

// Kind implements Input.
func (Held) Kind() Kind { return KindHeld }

// Kind implements Input.
func (Running) Kind() Kind { return KindRunning }

// Kind implements Input.
func (SteppedDown) Kind() Kind { return KindSteppedDown }

// Kind implements Input.
func (Abandoned) Kind() Kind { return KindAbandoned }

// Kind implements Input.
func (Note) Kind() Kind { return KindNote }
