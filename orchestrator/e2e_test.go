package orchestrator_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/events"
)

func TestDiamondPlanCompletesInOrderWithDataFlow(t *testing.T) {
	s := startStack(t)
	submit(t, s.env.Bus, "default", "diamond", events.WorkflowSubmitted{Query: "diamond", Plan: plan(
		step("A", "echo"), step("B", "echo", "A"), step("C", "echo", "A"), step("D", "echo", "B", "C"),
	)})
	rs := collect(t, s.env.Bus, "default", "diamond")
	end := last(t, rs)
	if end.Type != events.TypeComplete {
		t.Fatalf("workflow ended with %s: %s", end.Type, describe(rs))
	}
	// Offsets strictly increase; each step completes after its dependencies.
	done := map[string]int{}
	var prev uint64
	for i, r := range rs {
		if r.Offset <= prev {
			t.Fatalf("offset %d after %d", r.Offset, prev)
		}
		prev = r.Offset
		if r.Envelope.Type == events.TypeStatus {
			var st events.Status
			if err := json.Unmarshal(r.Envelope.Data, &st); err != nil {
				t.Fatal(err)
			}
			if st.StepID != "" && st.State == events.StateCompleted {
				done[st.StepID] = i
			}
		}
	}
	for _, c := range [][2]string{{"A", "B"}, {"A", "C"}, {"B", "D"}, {"C", "D"}} {
		a, okA := done[c[0]]
		b, okB := done[c[1]]
		if !okA || !okB || a >= b {
			t.Errorf("step %s must complete before %s: positions %v", c[0], c[1], done)
		}
	}
	var complete events.Complete
	if err := json.Unmarshal(end.Data, &complete); err != nil {
		t.Fatal(err)
	}
	var d echo.Output
	if err := json.Unmarshal(complete.Result, &d); err != nil {
		t.Fatal(err)
	}
	if d.StepID != "D" || len(d.DependencyOutputs) != 2 {
		t.Fatalf("result is not D's output with B and C: %s", complete.Result)
	}
	for _, dep := range []string{"B", "C"} {
		var o echo.Output
		if err := json.Unmarshal(d.DependencyOutputs[dep], &o); err != nil {
			t.Fatal(err)
		}
		if o.StepID != dep || !strings.Contains(string(o.DependencyOutputs["A"]), `"from":"A"`) {
			t.Errorf("D's input from %s does not carry A's output: %s", dep, d.DependencyOutputs[dep])
		}
	}
	cp, err := s.orch.Checkpoint(t.Context(), "default", "diamond")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Status != events.StateCompleted || len(cp.Stages) != 3 {
		t.Fatalf("checkpoint: status %s, stages %v", cp.Status, cp.Stages)
	}
}

func TestBareQueryPlansOneEchoStep(t *testing.T) {
	s := startStack(t)
	submit(t, s.env.Bus, "acme", "bare", events.WorkflowSubmitted{Query: "hello world"})
	rs := collect(t, s.env.Bus, "acme", "bare")
	end := last(t, rs)
	if end.Type != events.TypeComplete || !strings.Contains(string(end.Data), "hello world") {
		t.Fatalf("got %s", describe(rs))
	}
}

func TestBadPlansFailWithTheCulprit(t *testing.T) {
	s := startStack(t)
	cases := []struct {
		name, code, step, pointer, says string
		plan                            *events.Plan
	}{
		{"cycle", events.CodeCycle, "A", "/plan/steps/0/depends_on", "cycle",
			plan(step("A", "echo", "C"), step("B", "echo", "A"), step("C", "echo", "B"))},
		{"unknown-capability", events.CodeUnknownCapability, "B", "/plan/steps/1/capability", `"teleport"`,
			plan(step("A", "echo"), step("B", "teleport", "A"))},
		{"unknown-dependency", events.CodeUnknownDependency, "B", "/plan/steps/1/depends_on/0", `"Z"`,
			plan(step("A", "echo"), step("B", "echo", "Z"))},
		{"duplicate-id", events.CodeInvalidPlan, "A", "/plan/steps/1/id", "twice",
			plan(step("A", "echo"), step("A", "echo"))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			submit(t, s.env.Bus, "default", c.name, events.WorkflowSubmitted{Plan: c.plan})
			rs := collect(t, s.env.Bus, "default", c.name)
			end := last(t, rs)
			if end.Type != events.TypeError {
				t.Fatalf("want error event, got %s", describe(rs))
			}
			var e events.Error
			if err := json.Unmarshal(end.Data, &e); err != nil {
				t.Fatal(err)
			}
			if e.Code != c.code || e.StepID != c.step || e.Pointer != c.pointer || !strings.Contains(e.Message, c.says) {
				t.Fatalf("error event %+v, want code %s step %s pointer %s mentioning %s", e, c.code, c.step, c.pointer, c.says)
			}
		})
	}
	// The server keeps serving after bad input.
	submit(t, s.env.Bus, "default", "after", events.WorkflowSubmitted{Query: "still alive"})
	if end := last(t, collect(t, s.env.Bus, "default", "after")); end.Type != events.TypeComplete {
		t.Fatalf("after bad plans: %s", end.Type)
	}
}

// TestWideFanOutCompletes: 40 parallel steps whose replies arrive together
// contend for one checkpoint; every reply is recorded and the sink sees all.
func TestWideFanOutCompletes(t *testing.T) {
	s := startStack(t)
	var steps []events.PlanStep
	var all []string
	for i := range 40 {
		id := fmt.Sprintf("p%02d", i)
		steps = append(steps, step(id, "echo"))
		all = append(all, id)
	}
	steps = append(steps, step("sink", "echo", all...))
	submit(t, s.env.Bus, "default", "wide", events.WorkflowSubmitted{Plan: plan(steps...)})
	end := last(t, collect(t, s.env.Bus, "default", "wide"))
	if end.Type != events.TypeComplete {
		t.Fatalf("wide plan ended %s: %s", end.Type, end.Data)
	}
	var c events.Complete
	if err := json.Unmarshal(end.Data, &c); err != nil {
		t.Fatal(err)
	}
	var sink echo.Output
	if err := json.Unmarshal(c.Result, &sink); err != nil || len(sink.DependencyOutputs) != 40 {
		t.Fatalf("sink saw %d dependency outputs (%v)", len(sink.DependencyOutputs), err)
	}
}
