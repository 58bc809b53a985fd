package workflow_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// diamond is the property test's plan: A and an optional O first, B after
// A with a fallback, C after A needing approval, D after B, C and O.
func diamond() events.Plan {
	return events.Plan{Steps: []events.PlanStep{
		{ID: "A", Capability: "echo"},
		{ID: "O", Capability: "echo", Optional: true},
		{ID: "B", Capability: "echo", DependsOn: []string{"A"}, Fallback: "echo2"},
		{ID: "C", Capability: "select", DependsOn: []string{"A"}, RequiresApproval: true},
		{ID: "D", Capability: "echo", DependsOn: []string{"B", "C", "O"}},
	}}
}

// diamondWait is diamond whose optional O is a wait for signal "go"
// with a timeout (which fails it, and the workflow goes on without it).
func diamondWait() events.Plan {
	p := diamond()
	p.Steps[1] = events.PlanStep{ID: "O", Capability: workflow.CapabilityWait, Optional: true,
		Input: json.RawMessage(`{"signal":"go","timeout":"30s"}`)}
	return p
}

var stepIDs = []string{"A", "O", "B", "C", "D", "X"}

// run applies a sequence of inputs, drawn by pick from what has happened so
// far, and checks the engine's invariants after each.
type run struct {
	t       testing.TB
	cp      *workflow.Checkpoint
	now     time.Time
	events  int              // the next event key's number
	sent    map[string]bool  // step request keys published
	once    map[string]int   // replies recorded per step
	history []workflow.Input // inputs applied, for redeliveries
	policy  workflow.Policy  // parked or not
	log     []string         // what happened, for a failure's report
}

func newRun(t testing.TB) *run { return newRunWith(t, policy) }

// newRunWith starts a run under a policy; under parked, its workflow has
// a token budget too.
func newRunWith(t testing.TB, p workflow.Policy) *run {
	r := &run{t: t, cp: fresh("prop"), now: t0, sent: map[string]bool{}, once: map[string]int{}, policy: p}
	if len(p.Park) > 0 {
		r.cp.Budget = &events.Budget{Tokens: 60}
	}
	r.step(workflow.Planned{Plan: diamond(), TimeoutMS: 60_000})
	return r
}

// newWaitRun starts a run whose plan has a wait step (diamondWait).
func newWaitRun(t testing.TB, p workflow.Policy) *run {
	r := &run{t: t, cp: fresh("prop"), now: t0, sent: map[string]bool{}, once: map[string]int{}, policy: p}
	r.step(workflow.Planned{Plan: diamondWait(), TimeoutMS: 60_000})
	return r
}

// newWaitingRun starts a run whose workflow waits for its concurrency
// key until a Released comes (the generator draws them).
func newWaitingRun(t testing.TB, p workflow.Policy) *run {
	r := &run{t: t, cp: fresh("prop"), now: t0, sent: map[string]bool{}, once: map[string]int{}, policy: p}
	r.cp.Concurrency = &events.Concurrency{Key: "k", Limit: 1}
	r.cp.Session = &workflow.SessionState{ID: "s"}
	r.step(workflow.Planned{Plan: diamond(), TimeoutMS: 60_000, Wait: "waiting for concurrency key k"})
	return r
}

func (r *run) step(in workflow.Input) {
	r.t.Helper()
	r.now = r.now.Add(time.Duration(1+len(r.history)%3) * time.Second)
	before, _ := json.Marshal(r.cp)
	was := r.cp.Status
	eff, err := workflow.Apply(r.cp, in, r.now, r.policy)
	r.log = append(r.log, fmt.Sprintf("%s %+v → %s", in.Kind(), in, summary(r.cp, eff, err)))
	r.history = append(r.history, in)
	fail := func(format string, args ...any) {
		r.t.Helper()
		r.t.Fatalf("%s\nafter:\n  %s", fmt.Sprintf(format, args...), joinLines(r.log))
	}
	if err != nil {
		if !errors.Is(err, workflow.ErrStale) && !errors.Is(err, workflow.ErrIllegal) {
			fail("unexpected error: %v", err)
		}
		if after, _ := json.Marshal(r.cp); !bytes.Equal(before, after) {
			fail("a refused input changed the checkpoint")
		}
		return
	}
	// A terminal state is final; failed is left only by a resume.
	switch {
	case was == events.StateFailed && r.cp.Status != was && in.Kind() != workflow.KindResume:
		fail("failed left by %s", in.Kind())
	case was.Terminal() && was != events.StateFailed:
		fail("%s accepted %s", was, in.Kind())
	}
	// Appended events stay contiguous; each step request is new.
	for _, m := range eff.Outbox {
		switch m.Type {
		case events.TypeStepRequested:
			if r.sent[m.MsgID] {
				fail("step request %s published twice", m.MsgID)
			}
			r.sent[m.MsgID] = true
		case events.TypeDeadline:
		default:
			if want := events.EventKey("acme", "prop", r.events); m.MsgID != want {
				fail("event %s has key %s, want %s", m.Type, m.MsgID, want)
			}
			r.events++
		}
	}
	if r.cp.EventCount != r.events {
		fail("event count %d, events emitted %d", r.cp.EventCount, r.events)
	}
	// A step's reply (or a wait step's end) is recorded at most once; a
	// paused workflow dispatches nothing new.
	for _, tr := range eff.Transitions {
		switch tr.Cause {
		case workflow.CauseReply, workflow.CauseSignal, workflow.CauseTimer:
			if tr.StepID != "" && tr.To == events.StateCompleted {
				if r.once[tr.StepID]++; r.once[tr.StepID] > 1 {
					fail("step %s completed twice", tr.StepID)
				}
			}
		}
		if r.cp.Paused && tr.StepID != "" && tr.To == events.StateWorking && tr.Cause != workflow.CauseRedispatch && tr.Cause != workflow.CauseRecovery {
			fail("paused, yet step %s dispatched (%s)", tr.StepID, tr.Cause)
		}
	}
	if r.cp.Paused && r.cp.Status != events.StateSubmitted && r.cp.Phase != workflow.PhasePaused {
		fail("paused in phase %s", r.cp.Phase)
	}
	r.checkState(fail)
}

// checkState checks what must hold of any stored checkpoint.
func (r *run) checkState(fail func(string, ...any)) {
	cp := r.cp
	pending := len(cp.Awaiting())
	if cp.BudgetHeld {
		pending++
	}
	switch cp.Status {
	case events.StateCompleted:
		for id := range cp.Tasks {
			if !cp.Settled(id) {
				fail("completed with step %s %s", id, cp.Tasks[id].Status)
			}
		}
	case events.StateInputRequired:
		if pending == 0 {
			fail("input-required with no step awaiting a decision")
		}
	case events.StateWorking:
		if pending > 0 {
			fail("working with %d steps awaiting a decision", pending)
		}
	case events.StateSubmitted:
		// Waiting for a concurrency slot: nothing dispatched yet.
		if cp.Phase != workflow.PhaseWaiting {
			fail("submitted in phase %s after planning", cp.Phase)
		}
		for id, t := range cp.Tasks {
			if t.Status != events.StateSubmitted {
				fail("waiting with step %s %s", id, t.Status)
			}
		}
	}
	if cp.Session != nil && cp.Session.Dropped && cp.Status != events.StateCanceled {
		fail("turn dropped from its session but the workflow is %s", cp.Status)
	}
	if cp.Status.Terminal() {
		return
	}
	// Every dispatched step of a live workflow is leased: its request was
	// published, its lease runs from its dispatch, the watchdog is armed.
	for id, t := range cp.Tasks {
		if t.Status != events.StateWorking {
			continue
		}
		if t.Wait != nil {
			if t.Wait.At == nil && t.Wait.Signal == "" {
				fail("wait step %s waits for nothing", id)
			}
			continue
		}
		if !r.sent[events.StepKey("acme", "prop", id, t.Attempt)] || t.DispatchedAt == nil || cp.Watch == 0 {
			fail("step %s attempt %d is working but not leased", id, t.Attempt)
		}
	}
}

func joinLines(l []string) string {
	var b bytes.Buffer
	for i, s := range l {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// next draws an input: mostly replies to live attempts, also replies to
// old and never-sent attempts, controls, timers, the watchdog's verdicts,
// and redeliveries of inputs already applied.
func (r *run) next(rng *rand.Rand) workflow.Input {
	step := stepIDs[rng.IntN(len(stepIDs))]
	attempt := 1
	if t := r.cp.Tasks[step]; t != nil {
		attempt = max(t.Attempt+rng.IntN(3)-1, 0)
	}
	switch n := rng.IntN(100); {
	case n < 30:
		return workflow.Completed{StepCompleted: events.StepCompleted{StepID: step, Attempt: attempt, Worker: "w",
			Output: json.RawMessage(fmt.Sprintf(`{"confidence":%.1f}`, rng.Float64())),
			Usage:  &events.Usage{PromptTokens: int64(rng.IntN(30)), CompletionTokens: int64(rng.IntN(10)), Calls: 1}}}
	case n < 40:
		return workflow.Failed{StepFailed: events.StepFailed{StepID: step, Attempt: attempt, Error: "boom"}}
	case n < 45:
		return workflow.Lost{StepID: step, Attempt: attempt}
	case n < 47:
		return workflow.Held{StepID: step, Attempt: attempt}
	case n < 48:
		return workflow.Running{StepID: step, Attempt: attempt}
	case n < 50:
		return workflow.SteppedDown{StepID: step, Attempt: attempt, Message: "down"}
	case n < 53:
		return workflow.Abandoned{StepID: step, Attempt: attempt, Message: "gone"}
	case n < 60:
		return workflow.Approve{StepID: []string{"", "C"}[rng.IntN(2)]}
	case n < 62:
		return workflow.Reject{}
	case n < 63:
		return workflow.Cancel{}
	case n < 64:
		return workflow.Cancel{Reason: "interrupted", Rollback: true}
	case n < 68:
		return workflow.Resume{}
	case n < 70:
		return workflow.Deadline{}
	case n < 72:
		return workflow.Note{Message: "note"}
	case n < 74:
		return workflow.MalformedReply{StepID: step, Error: "bad"}
	case n < 75:
		return workflow.Planned{Plan: chain()}
	case n < 78:
		return workflow.Throttled{StepID: step, Attempt: attempt, Until: r.now.Add(time.Second), Reason: "rate"}
	case n < 81:
		return workflow.Released{}
	case n < 84:
		return workflow.Signal{Name: []string{"go", "other"}[rng.IntN(2)], Data: json.RawMessage(`{"n":1}`), ID: fmt.Sprintf("s%d", rng.IntN(4))}
	case n < 86:
		return workflow.Pause{Reason: "p"}
	case n < 88:
		return workflow.Unpause{}
	case n < 90:
		return workflow.WaitDue{StepID: step, Attempt: attempt}
	}
	return r.history[rng.IntN(len(r.history))] // a redelivery
}

func TestApplyProperties(t *testing.T) {
	runs := 400
	if testing.Short() {
		runs = 200
	}
	for seed := range uint64(runs) {
		rng := rand.New(rand.NewPCG(seed, 22))
		p := policy
		if seed%2 == 1 {
			p = parked // every echo step goes to its queue; the workflow has a budget
		}
		r := newRunWith(t, p)
		if seed%3 == 2 {
			r = newWaitingRun(t, p) // waits for its concurrency key until released
		}
		if seed%5 == 4 {
			r = newWaitRun(t, p) // has a wait step
		}
		for range 60 {
			r.step(r.next(rng))
		}
	}
}

// TestApplyMaxLost: a step lost MaxLost times in a row fails; its fallback
// then takes over.
func TestApplyMaxLost(t *testing.T) {
	r := newRun(t)
	for a := 1; a < workflow.DefaultMaxLost; a++ {
		r.step(workflow.Lost{StepID: "A", Attempt: a})
	}
	if got := r.cp.Tasks["A"]; got.Attempt != workflow.DefaultMaxLost || got.Status != events.StateWorking {
		t.Fatalf("A after %d losses: attempt %d, %s", workflow.DefaultMaxLost-1, got.Attempt, got.Status)
	}
	r.step(workflow.Lost{StepID: "A", Attempt: workflow.DefaultMaxLost})
	if r.cp.Status != events.StateFailed || r.cp.Error == nil || r.cp.Error.StepID != "A" {
		t.Fatalf("A lost %d times: workflow %s, error %+v", workflow.DefaultMaxLost, r.cp.Status, r.cp.Error)
	}
}

// TestApplyTransitions: the transitions name causes that metrics read.
func TestApplyTransitions(t *testing.T) {
	r := newRun(t)
	r.step(workflow.Completed{StepCompleted: events.StepCompleted{StepID: "A", Attempt: 1, Output: json.RawMessage(`1`)}})
	cp := clone(t, r.cp)
	eff, err := workflow.Apply(cp, workflow.Failed{StepFailed: events.StepFailed{StepID: "B", Attempt: 1, Error: "x"}}, r.now.Add(time.Second), policy)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range eff.Transitions {
		got = append(got, tr.String()+" "+tr.Capability)
	}
	want := []string{"step B working→submitted (fallback) echo", "step B submitted→working (dispatch) echo2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("transitions %q, want %q", got, want)
	}
	if len(eff.Dispatches) != 1 || eff.Dispatches[0].Capability != "echo2" || eff.Outbox[eff.Dispatches[0].Index].Type != events.TypeStepRequested {
		t.Errorf("dispatches %+v", eff.Dispatches)
	}
}
