package workflow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// Timer is the data of a durable timer, an events.TypeDeadline message on
// the workflow's timer subject (subjects.Timer). Without Watch it is the
// workflow's deadline, which the timer consumer naks with a delay until it
// is due. With Watch it is the workflow's Watch-th watchdog timer: a
// message schedule on its watch subject (subjects.Watch) that the server
// holds and fires onto the timer subject when it is due, and that the
// watchdog schedules again for the next lease due.
//
// With Step it is the timer of a wait step's attempt (WaitTimer), held
// like the deadline until due; then it is the engine's WaitDue.
type Timer struct {
	At      time.Time `json:"at"`
	Watch   int       `json:"watch,omitempty"`
	Step    string    `json:"step,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
}

// DeadlineTimer is the timer that fails the workflow at its deadline.
func DeadlineTimer(cp *Checkpoint, at, now time.Time) (Outgoing, error) {
	return newTimer(cp, cp.TenantID+"/"+cp.WorkflowID+"/deadline", Timer{At: at}, now)
}

// WaitTimer is the timer of a wait step's attempt, due at at: the end of
// its wait, or its signal's timeout. It is a message on the workflow's
// timer subject that the timer consumer holds until due (as the
// deadline's), because the watch subject holds one schedule per workflow.
func WaitTimer(cp *Checkpoint, step string, attempt int, at, now time.Time) (Outgoing, error) {
	m, err := newTimer(cp, fmt.Sprintf("%s/%s/wait/%s/%d", cp.TenantID, cp.WorkflowID, step, attempt), Timer{At: at.UTC(), Step: step, Attempt: attempt}, now)
	m.StepID = step
	return m, err
}

// FirstLook is how long after a workflow's first dispatch (or a resume)
// the watchdog first looks at its steps: a third of a lease, the workers'
// AckWait by default. Its steps' leases are mostly StepLease, but a step
// handed back to a worker with a verdict has its worker's AckWait
// (Task.HandedLeaseMS), and a worker that died running one should not
// hold it for a whole StepLease. At each look the watchdog schedules the
// next for the earliest lease due.
func FirstLook(stepLease time.Duration) time.Duration { return stepLease / 3 }

// WatchTimer schedules the workflow's watchdog timer number n at at.
func WatchTimer(cp *Checkpoint, n int, at, now time.Time) (Outgoing, error) {
	at = at.UTC()
	m, err := newTimer(cp, fmt.Sprintf("%s/%s/watch/%d/%d", cp.TenantID, cp.WorkflowID, n, at.UnixMilli()), Timer{At: at, Watch: n}, now)
	if err != nil {
		return m, err
	}
	if m.Subject, err = subjects.Watch(cp.TenantID, cp.WorkflowID); err != nil {
		return m, err
	}
	m.Target, _ = subjects.Timer(cp.TenantID, cp.WorkflowID)
	m.At = &at
	return m, nil
}

func newTimer(cp *Checkpoint, msgID string, tm Timer, now time.Time) (Outgoing, error) {
	subj, err := subjects.Timer(cp.TenantID, cp.WorkflowID)
	if err != nil {
		return Outgoing{}, err
	}
	data, err := json.Marshal(tm)
	if err != nil {
		return Outgoing{}, err
	}
	return Outgoing{Subject: subj, MsgID: msgID, Type: events.TypeDeadline, Time: now.UTC(), Data: data}, nil
}
