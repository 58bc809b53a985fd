package workflow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/events"
)

// Wait steps. A step of capability CapabilityWait is run by the engine
// itself, never by a worker: when it is ready it becomes working without a
// step request, and it completes when its durable timer comes due
// (WaitDue) or its signal comes (Signal). Its input (schema wait.input,
// WaitSpec) is one of
//
//	{"duration": "10m"}                 completes after 10 minutes with {"waited": "10m0s", "until": …}
//	{"until": "2026-12-01T09:00:00Z"}   completes then, with the same
//	{"signal": "approved"}              completes with the body of signal "approved"
//	{"signal": "approved", "timeout": "24h", "on_timeout": "fail"|"continue"}
//
// A signal's timeout fails the step by default (its fallback, or an
// optional step's continuing without it, apply as to any failure);
// on_timeout "continue" completes it with {"timed_out": true, "signal":
// name} so that its dependents run. A signal sent before its wait step is
// reached is kept in the checkpoint (Checkpoint.Signals, at most
// MaxSignals of a name) and consumed, oldest first, when it is.

// CapabilityWait is the capability of a wait step.
const CapabilityWait = "wait"

// What a signal's timeout does to its wait step (WaitSpec.OnTimeout).
const (
	OnTimeoutFail     = "fail"
	OnTimeoutContinue = "continue"
)

// MaxSignals bounds the signals of one name a workflow keeps for a wait
// step not yet reached, and MaxSignalNames the names: a signal past
// either is refused.
const (
	MaxSignals     = 16
	MaxSignalNames = 64
)

// WaitSpec is a wait step's input: exactly one of Duration, Until and
// Signal; Timeout and OnTimeout only with Signal.
type WaitSpec struct {
	Duration  string `json:"duration,omitempty"`
	Until     string `json:"until,omitempty"`
	Signal    string `json:"signal,omitempty"`
	Timeout   string `json:"timeout,omitempty"`
	OnTimeout string `json:"on_timeout,omitempty"`
}

// WaitState is a wait step's live wait, kept in its Task.
type WaitState struct {
	// Signal is the signal it waits for ("" for a duration or until).
	Signal string `json:"signal,omitempty"`
	// At, when set, is when its timer is due: the end of a duration or
	// until, or a signal's timeout.
	At *time.Time `json:"at,omitempty"`
	// OnTimeout is what the timeout of a signal does.
	OnTimeout string `json:"on_timeout,omitempty"`
	// SignalID is the id of the signal that completed it, so that the same
	// signal sent again is known.
	SignalID string `json:"signal_id,omitempty"`
}

// KeptSignal is a signal a workflow keeps for a wait step not yet reached.
type KeptSignal struct {
	ID   string          `json:"id,omitempty"`
	Data json.RawMessage `json:"data"`
	At   time.Time       `json:"at"`
}

// ParseWait reads a wait step's input. On error it returns the JSON
// pointer, within the input, of the field at fault.
func ParseWait(input json.RawMessage) (WaitSpec, string, error) {
	var w WaitSpec
	if len(input) == 0 || string(input) == "null" {
		return w, "", fmt.Errorf("a wait step needs an input: {\"duration\": …}, {\"until\": …} or {\"signal\": …}")
	}
	if err := json.Unmarshal(input, &w); err != nil {
		return w, "", fmt.Errorf("a wait step's input is an object: %v", err)
	}
	n := 0
	for _, s := range []string{w.Duration, w.Until, w.Signal} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return w, "", fmt.Errorf("a wait step's input has exactly one of duration, until and signal (it has %d)", n)
	}
	if w.Duration != "" {
		if d, err := time.ParseDuration(w.Duration); err != nil || d < 0 {
			return w, "/duration", fmt.Errorf("duration %q is not a duration such as 90s, 10m or 1h30m", w.Duration)
		}
	}
	if w.Until != "" {
		if _, err := time.Parse(time.RFC3339, w.Until); err != nil {
			return w, "/until", fmt.Errorf("until %q is not an RFC 3339 time such as 2026-12-01T09:00:00Z", w.Until)
		}
	}
	if w.Timeout != "" {
		if w.Signal == "" {
			return w, "/timeout", fmt.Errorf("timeout applies to a wait for a signal only")
		}
		if d, err := time.ParseDuration(w.Timeout); err != nil || d < 0 {
			return w, "/timeout", fmt.Errorf("timeout %q is not a duration such as 90s, 10m or 24h", w.Timeout)
		}
	}
	switch w.OnTimeout {
	case "", OnTimeoutFail, OnTimeoutContinue:
	default:
		return w, "/on_timeout", fmt.Errorf("on_timeout %q: want %q or %q", w.OnTimeout, OnTimeoutFail, OnTimeoutContinue)
	}
	if w.OnTimeout != "" && w.Timeout == "" {
		return w, "/on_timeout", fmt.Errorf("on_timeout needs a timeout")
	}
	return w, "", nil
}

// CheckWaits returns a *PlanError for the first wait step of p whose input
// is not a wait (ParseWait), else nil.
func CheckWaits(p events.Plan) *PlanError {
	for i, s := range p.Steps {
		if s.Capability != CapabilityWait {
			continue
		}
		if _, ptr, err := ParseWait(s.Input); err != nil {
			return &PlanError{Code: events.CodeInvalidInput, StepID: s.ID, Pointer: fmt.Sprintf("/plan/steps/%d/input%s", i, ptr),
				Message: fmt.Sprintf("step %q: %v", s.ID, err)}
		}
	}
	return nil
}

// end is when the wait's timer is due, if it has one.
func (w WaitSpec) end(now time.Time) *time.Time {
	var at time.Time
	switch {
	case w.Duration != "":
		d, _ := time.ParseDuration(w.Duration)
		at = now.Add(d)
	case w.Until != "":
		at, _ = time.Parse(time.RFC3339, w.Until)
	case w.Timeout != "":
		d, _ := time.ParseDuration(w.Timeout)
		at = now.Add(d)
	default:
		return nil
	}
	at = at.UTC()
	return &at
}

// startWait starts a ready wait step: it is working, with its timer set,
// or completed at once with a signal kept for it or a time already past.
// It reports whether the step completed.
func (x *tx) startWait(s events.PlanStep, t *Task, cause Cause) (bool, error) {
	cp := x.cp
	spec, _, _ := ParseWait(s.Input) // checked when planned: a bad one waits for nothing
	t.Attempt++
	x.setTask(s.ID, t, events.StateWorking, cause)
	now := x.now
	t.DispatchedAt, t.Since, t.StepSeq = &now, t.Attempt, 0
	t.HeldSince, t.SteppedDownAt, t.RenewedAt, t.HandedWith, t.HandedLeaseMS = nil, nil, nil, "", 0
	t.Wait = &WaitState{Signal: spec.Signal, OnTimeout: spec.OnTimeout}
	x.setStatus(cp.Status, PhaseExecuting, cause)
	if spec.Signal != "" {
		if kept, ok := x.takeSignal(spec.Signal); ok {
			t.Wait.SignalID = kept.ID
			return true, x.endWait(s.ID, t, kept.Data, CauseSignal, fmt.Sprintf("signal %q, kept since %s, received", spec.Signal, kept.At.Format(time.RFC3339)))
		}
	}
	at := spec.end(now)
	if at != nil && spec.Signal == "" && !at.After(now) {
		return true, x.endWait(s.ID, t, waited(t, *at), CauseTimer, "waited until "+at.Format(time.RFC3339))
	}
	msg := fmt.Sprintf("waiting for signal %q (POST /v1/workflows/%s/signals/%s)", spec.Signal, cp.WorkflowID, spec.Signal)
	if at != nil {
		t.Wait.At = at
		m, err := WaitTimer(cp, s.ID, t.Attempt, *at, now)
		if err != nil {
			return false, err
		}
		x.eff.Outbox = append(x.eff.Outbox, m)
		if spec.Signal == "" {
			msg = "waiting until " + at.Format(time.RFC3339)
		} else {
			msg += fmt.Sprintf(" until %s, then %s", at.Format(time.RFC3339), onTimeout(spec.OnTimeout))
		}
	}
	return false, x.emit(events.TypeStatus, s.ID, events.Status{State: events.StateWorking, StepID: s.ID, Message: msg})
}

func onTimeout(s string) string {
	if s == OnTimeoutContinue {
		return "continuing without it"
	}
	return "failing the step"
}

// waited is the output of a wait for a time.
func waited(t *Task, at time.Time) json.RawMessage {
	d := time.Duration(0)
	if t.DispatchedAt != nil && at.After(*t.DispatchedAt) {
		d = at.Sub(*t.DispatchedAt)
	}
	b, _ := json.Marshal(map[string]string{"waited": d.Round(time.Millisecond).String(), "until": at.Format(time.RFC3339Nano)})
	return b
}

// takeSignal consumes the oldest signal kept under name.
func (x *tx) takeSignal(name string) (KeptSignal, bool) {
	kept := x.cp.Signals[name]
	if len(kept) == 0 {
		return KeptSignal{}, false
	}
	first := kept[0]
	if len(kept) == 1 {
		delete(x.cp.Signals, name)
		if len(x.cp.Signals) == 0 {
			x.cp.Signals = nil
		}
	} else {
		x.cp.Signals[name] = kept[1:]
	}
	return first, true
}

// endWait completes a wait step with output; the caller moves the
// workflow on.
func (x *tx) endWait(id string, t *Task, output json.RawMessage, cause Cause, msg string) error {
	cp := x.cp
	if len(output) == 0 {
		output = json.RawMessage("null")
	}
	now := x.now
	t.Output, t.Worker, t.CompletedAt = output, "", &now
	x.setTask(id, t, events.StateCompleted, cause)
	cp.measure(now, false)
	cp.ExecutionOrder = append(cp.ExecutionOrder, id)
	return x.emit(events.TypeStatus, id, x.counted(events.Status{State: events.StateCompleted, StepID: id, Message: msg,
		Artifact: stepArtifact(events.StepCompleted{StepID: id, Capability: t.Capability, Output: output})}))
}

// waitingFor returns the first step, in plan order, that waits for the
// signal name.
func (cp *Checkpoint) waitingFor(name string) (string, *Task) {
	for _, s := range cp.Plan.Steps {
		if t := cp.Tasks[s.ID]; t != nil && t.Status == events.StateWorking && t.Wait != nil && t.Wait.Signal == name {
			return s.ID, t
		}
	}
	return "", nil
}

// seenSignal reports whether a signal with this id was received already.
func (cp *Checkpoint) seenSignal(id string) bool {
	if id == "" {
		return false
	}
	for _, kept := range cp.Signals {
		for _, k := range kept {
			if k.ID == id {
				return true
			}
		}
	}
	for _, t := range cp.Tasks {
		if t.Wait != nil && t.Wait.SignalID == id {
			return true
		}
	}
	return false
}

// signal completes the step waiting for the signal with its data, or keeps
// it for the wait step that will.
func (x *tx) signal(in Signal) error {
	cp := x.cp
	data := in.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	if id, t := cp.waitingFor(in.Name); t != nil {
		t.Wait.SignalID = in.ID
		x.eff.Message = fmt.Sprintf("signal %q received by step %s", in.Name, id)
		if err := x.endWait(id, t, data, CauseSignal, fmt.Sprintf("signal %q received", in.Name)); err != nil {
			return err
		}
		return x.advance(CauseSignal)
	}
	if cp.Signals == nil {
		cp.Signals = map[string][]KeptSignal{}
	}
	cp.Signals[in.Name] = append(cp.Signals[in.Name], KeptSignal{ID: in.ID, Data: data, At: x.now})
	n := len(cp.Signals[in.Name])
	x.eff.Message = fmt.Sprintf("signal %q kept for the wait step that will wait for it (%d kept)", in.Name, n)
	return x.emit(events.TypeStatus, "", events.Status{State: cp.Status, Message: fmt.Sprintf("signal %q received: no step waits for it yet, kept (%d of at most %d)", in.Name, n, MaxSignals)})
}

// waitDue ends a wait step whose timer came due: a wait for a time
// completes; a wait for a signal times out.
func (x *tx) waitDue(in WaitDue) error {
	t := x.cp.Tasks[in.StepID]
	at := x.now
	if t.Wait.At != nil {
		at = *t.Wait.At
	}
	if t.Wait.Signal == "" {
		if err := x.endWait(in.StepID, t, waited(t, at), CauseTimer, "waited until "+at.Format(time.RFC3339)); err != nil {
			return err
		}
		return x.advance(CauseTimer)
	}
	after := "its timeout"
	if t.DispatchedAt != nil {
		after = at.Sub(*t.DispatchedAt).Round(time.Second).String()
	}
	if t.Wait.OnTimeout == OnTimeoutContinue {
		out, _ := json.Marshal(map[string]any{"timed_out": true, "signal": t.Wait.Signal})
		if err := x.endWait(in.StepID, t, out, CauseTimer, fmt.Sprintf("no signal %q came within %s: continuing without it", t.Wait.Signal, after)); err != nil {
			return err
		}
		return x.advance(CauseTimer)
	}
	return x.failed(events.StepFailed{StepID: in.StepID, Capability: t.Capability, Attempt: t.Attempt,
		Error: fmt.Sprintf("no signal %q came within %s", t.Wait.Signal, after)})
}
