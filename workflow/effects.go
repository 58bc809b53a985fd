package workflow

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/events"
)

// Effects are what a transition asks of the world, as values.
type Effects struct {
	// Outbox holds the messages to publish, in order: client events (each
	// with its dedup key), step requests and timers. The orchestrator
	// stores them with the checkpoint before it publishes them.
	Outbox []Outgoing
	// Dispatches are the step attempts among the Outbox's messages.
	Dispatches []Dispatch
	// StopSteps, when set, is why workers must stop the workflow's running
	// steps (its deadline passed, or it failed or was rejected while some
	// ran): a cancel record and a control message.
	StopSteps string
	// Transitions are the status changes, in order: the workflow's (no
	// StepID) and its steps'.
	Transitions []Transition
	// Outcome is the terminal status the workflow reached ("" if none).
	Outcome events.State
	// Message says what a control did.
	Message string
	// Usage is what the replies this transition recorded spent on models.
	Usage events.Usage
}

// Dispatch is one step attempt put in the outbox.
type Dispatch struct {
	StepID, Capability string
	Attempt            int
	// Parked says the request went to the capability's queue (Policy.Park).
	Parked bool
	// Index is the request's place in Effects.Outbox.
	Index int
}

// Cause is why a status changed.
type Cause string

// Causes of a transition.
const (
	CausePlan       Cause = "plan"       // planned, refused, or forked
	CauseDispatch   Cause = "dispatch"   // a step dispatched by the plan (first run, fallback, resume)
	CauseReply      Cause = "reply"      // a step's reply recorded
	CauseFallback   Cause = "fallback"   // a failed step handed to its fallback capability
	CauseApproval   Cause = "approval"   // a human decision
	CauseConfirm    Cause = "confirm"    // a step held for a confirmation before it runs
	CauseCancel     Cause = "cancel"     // canceled on request
	CauseDeadline   Cause = "deadline"   // the workflow's deadline passed
	CauseResume     Cause = "resume"     // a failed workflow resumed
	CauseRedispatch Cause = "redispatch" // a lost attempt dispatched again by the watchdog
	CauseRecovery   Cause = "recovery"   // a held attempt abandoned and dispatched afresh
	CauseAdvance    Cause = "advance"    // the workflow moved on as its steps settled
	CauseRelease    Cause = "release"    // a workflow waiting for its concurrency key started
	CauseSignal     Cause = "signal"     // a wait step completed by its signal
	CauseTimer      Cause = "timer"      // a wait step's timer came due
	CausePause      Cause = "pause"      // the workflow paused
	CauseUnpause    Cause = "unpause"    // the workflow unpaused
)

// Transition is one status change: the workflow's when StepID is empty.
type Transition struct {
	StepID string
	// Capability is the step's capability before the transition.
	Capability string
	From, To   events.State
	Cause      Cause
}

// String renders the transition for logs and test failures.
func (t Transition) String() string {
	who := "workflow"
	if t.StepID != "" {
		who = "step " + t.StepID
	}
	return fmt.Sprintf("%s %s→%s (%s)", who, t.From, t.To, t.Cause)
}

// Policy is what Apply needs of the orchestrator's configuration.
type Policy struct {
	// ApprovalThreshold is the output confidence at or above which a step
	// that requires approval is approved without a human.
	ApprovalThreshold float64
	// StepLease is how long a dispatched step may show no sign of life
	// before the watchdog examines it; 0 turns the watchdog off.
	StepLease time.Duration
	// MaxLost is how many attempts of a step in a row may be lost before
	// the step fails (default 5).
	MaxLost int
	// Park names the capabilities that are busy (flow control): a step
	// request of one goes to its tenant's queue of the capability, at the
	// workflow's priority, where the capability's admission takes it in
	// fair turn to the step subject, instead of to the step subject at
	// once. Either way the step is working and leased from its dispatch.
	Park map[string]bool
}

// DefaultMaxLost is Policy.MaxLost's default: a server that loses
// messages loses a few around a crash, so more than that means an answer
// that can never be recorded (an agent that replies where no orchestrator
// reads), and dispatching it again forever would hide it.
const DefaultMaxLost = 5

// ErrStale is returned for an input that came late or twice: a reply to a
// step already recorded or to an attempt the plan has moved past, a timer
// or lease verdict about a workflow or attempt that has moved on. Nothing
// changes.
var ErrStale = errors.New("workflow: stale input")

// ErrIllegal is what every *IllegalError matches with errors.Is.
var ErrIllegal = errors.New("workflow: illegal input")

// IllegalError is returned for an input the workflow's state does not
// accept; Reason says why, in words fit for the user who sent it.
type IllegalError struct {
	State  events.State
	Input  Kind
	Reason string
}

func (e *IllegalError) Error() string {
	return fmt.Sprintf("workflow: %s refused in state %s: %s", e.Input, e.State, e.Reason)
}

// Is makes errors.Is(err, ErrIllegal) true.
func (e *IllegalError) Is(target error) bool { return target == ErrIllegal }

func illegal(cp *Checkpoint, in Input, format string, args ...any) error {
	return &IllegalError{State: cp.Status, Input: in.Kind(), Reason: fmt.Sprintf(format, args...)}
}
