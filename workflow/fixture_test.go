package workflow_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// t0 is the fixtures' submission time; every input comes a second later
// than the one before.
var t0 = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

var policy = workflow.Policy{ApprovalThreshold: 0.8, StepLease: time.Minute}

// chain is a two-step plan: B depends on A.
func chain() events.Plan {
	return events.Plan{Steps: []events.PlanStep{
		{ID: "A", Capability: "echo", Input: json.RawMessage(`{"q":1}`)},
		{ID: "B", Capability: "echo", DependsOn: []string{"A"}},
	}}
}

// approvals is a plan whose step A needs approval while C runs beside it;
// B depends on A.
func approvals() events.Plan {
	return events.Plan{Steps: []events.PlanStep{
		{ID: "A", Capability: "select", RequiresApproval: true},
		{ID: "C", Capability: "echo"},
		{ID: "B", Capability: "echo", DependsOn: []string{"A"}},
	}}
}

// confirms is a plan whose step A waits for a confirmation before it
// runs (a requires_confirmation tool permission) while C runs beside it;
// B depends on A.
func confirms() events.Plan {
	return events.Plan{Steps: []events.PlanStep{
		{ID: "A", Capability: "tool_web_fetch", Input: json.RawMessage(`{"url":"https://example.org"}`)},
		{ID: "C", Capability: "echo"},
		{ID: "B", Capability: "echo", DependsOn: []string{"A"}},
	}}
}

// parallel is a plan whose steps A and C run at once; B depends on A.
func parallel() events.Plan {
	return events.Plan{Steps: []events.PlanStep{
		{ID: "A", Capability: "echo"},
		{ID: "C", Capability: "echo"},
		{ID: "B", Capability: "echo", DependsOn: []string{"A"}},
	}}
}

// waits is a plan whose step W waits for signal "go" for an hour at most;
// B depends on it.
func waits() events.Plan {
	return events.Plan{Steps: []events.PlanStep{
		{ID: "W", Capability: workflow.CapabilityWait, Input: json.RawMessage(`{"signal":"go","timeout":"1h"}`)},
		{ID: "B", Capability: "echo", DependsOn: []string{"W"}},
	}}
}

// confirmRule is the rule the confirming fixture's step A waits by.
const confirmRule = `acme/client requires_confirmation "tool_web_*"`

// fixture is a workflow in one state, and the step an input about a live
// attempt names (its attempt 1).
type fixture struct {
	name string
	cp   *workflow.Checkpoint
	step string
	now  time.Time
}

func fresh(id string) *workflow.Checkpoint {
	return workflow.New(workflow.Start{TenantID: "acme", WorkflowID: id, Query: "q"}, t0)
}

// drive applies inputs in order, failing the test on any error.
func drive(t testing.TB, cp *workflow.Checkpoint, ins ...workflow.Input) time.Time {
	if t != nil {
		t.Helper()
	}
	now := t0
	for _, in := range ins {
		now = now.Add(time.Second)
		if _, err := workflow.Apply(cp, in, now, policy); err != nil {
			if t == nil {
				panic(fmt.Sprintf("fixture: %s: %v", in.Kind(), err))
			}
			t.Fatalf("fixture: %s: %v", in.Kind(), err)
		}
	}
	return now
}

func done(step string, out string) workflow.Completed {
	return workflow.Completed{StepCompleted: events.StepCompleted{StepID: step, Capability: "echo", Attempt: 1, Worker: "w1", Output: json.RawMessage(out)}}
}

func fixtures(t testing.TB) []fixture {
	mk := func(name, step string, plan events.Plan, ins ...workflow.Input) fixture {
		cp := fresh(name)
		all := append([]workflow.Input{workflow.Planned{Plan: plan}}, ins...)
		if plan.Steps == nil {
			all = ins
		}
		now := drive(t, cp, all...)
		return fixture{name: name, cp: cp, step: step, now: now}
	}
	return []fixture{
		mk("planning", "A", events.Plan{}),
		mk("working", "A", chain()),
		mk("input-required", "C", approvals(), done("A", `{"confidence":0.2}`)),
		mk("failed", "A", chain(), workflow.Failed{StepFailed: events.StepFailed{StepID: "A", Attempt: 1, Error: "boom"}}),
		mk("completed", "A", chain(), done("A", `"a"`), workflow.Completed{StepCompleted: events.StepCompleted{StepID: "B", Attempt: 1, Output: json.RawMessage(`"b"`)}}),
		mk("canceled", "A", chain(), workflow.Cancel{Reason: "no longer needed"}),
		mk("rejected", "C", approvals(), done("A", `{}`), workflow.Reject{Comment: "wrong"}),
		mk("waiting", "A", events.Plan{}, workflow.Planned{Plan: chain(), Wait: "waiting for concurrency key \"k\": 1 running"}),
		mk("confirming", "C", events.Plan{}, workflow.Planned{Plan: confirms(), Confirm: map[string]string{"A": confirmRule}}),
		mk("paused", "C", parallel(), workflow.Pause{Reason: "maintenance"}, done("A", `"a"`)),
		mk("signal-wait", "W", waits()),
	}
}

// inputs returns one input of every kind; those about a step name step,
// attempt 1.
func inputs(step string) []workflow.Input {
	src := fresh("src")
	return []workflow.Input{
		workflow.Planned{Plan: chain()},
		workflow.Forked{From: events.ForkOf{WorkflowID: "src", Revision: 3}, Source: func() *workflow.Checkpoint {
			drive(nil, src, workflow.Planned{Plan: chain()}, done("A", `"a"`))
			return src
		}()},
		workflow.Malformed{Error: events.Error{Code: events.CodeInvalidRequest, Message: "bad", Pointer: "/query"}},
		workflow.Completed{StepCompleted: events.StepCompleted{StepID: step, Attempt: 1, Worker: "w1", Output: json.RawMessage(`"out"`)}},
		workflow.Failed{StepFailed: events.StepFailed{StepID: step, Attempt: 1, Error: "boom"}},
		workflow.MalformedReply{StepID: step, Error: "not JSON"},
		workflow.Cancel{Reason: "stop"},
		workflow.Approve{Comment: "fine"},
		workflow.Reject{Comment: "no"},
		workflow.Resume{},
		workflow.Deadline{},
		workflow.Lost{StepID: step, Attempt: 1},
		workflow.Held{StepID: step, Attempt: 1},
		workflow.SteppedDown{StepID: step, Attempt: 1, Message: "stepped down"},
		workflow.Abandoned{StepID: step, Attempt: 1, Message: "abandoned"},
		workflow.Note{Message: "noted", Recovery: events.RecoverySubmission},
		workflow.Throttled{StepID: step, Attempt: 1, Until: t0.Add(time.Minute), Reason: "rate limit"},
		workflow.Released{Message: "started: a slot of concurrency key \"k\" is free"},
		workflow.Signal{Name: "go", Data: json.RawMessage(`{"ok":true}`), ID: "sig-1"},
		workflow.WaitDue{StepID: step, Attempt: 1},
		workflow.Pause{Reason: "maintenance"},
		workflow.Unpause{},
		workflow.Running{StepID: step, Attempt: 1},
	}
}

// summary renders what Apply did: the status reached and the outbox in
// order (event names, "step:<id>" for a request, "timer"), "stale" or
// "illegal".
func summary(cp *workflow.Checkpoint, eff workflow.Effects, err error) string {
	switch {
	case errors.Is(err, workflow.ErrStale):
		return "stale"
	case errors.Is(err, workflow.ErrIllegal):
		return "illegal"
	case err != nil:
		return "error: " + err.Error()
	}
	var out []string
	for _, m := range eff.Outbox {
		switch m.Type {
		case events.TypeStepRequested:
			out = append(out, "step:"+m.StepID)
		case events.TypeDeadline:
			out = append(out, "timer")
		case events.TypeStatus:
			var st events.Status
			if json.Unmarshal(m.Data, &st) == nil && st.Artifact != nil {
				out = append(out, "status+artifact") // a step's output comes with its status
				continue
			}
			out = append(out, "status")
		default:
			parts := strings.Split(string(m.Type), ".")
			out = append(out, parts[len(parts)-2])
		}
	}
	s := fmt.Sprintf("%s [%s]", cp.Status, strings.Join(out, " "))
	if eff.StopSteps != "" {
		s += " stop"
	}
	return s
}

// parked is the policy of a busy echo capability: its requests go to the
// queue subject.
var parked = workflow.Policy{ApprovalThreshold: 0.8, StepLease: time.Minute, Park: map[string]bool{"echo": true}}
