package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// fnAgent is a test agent built from a function, counting its calls.
type fnAgent struct {
	name  string
	calls *atomic.Int64
	fn    func(ctx context.Context, req agents.Request) (json.RawMessage, error)
}

func newFn(name string, fn func(ctx context.Context, req agents.Request) (json.RawMessage, error)) fnAgent {
	return fnAgent{name: name, calls: new(atomic.Int64), fn: fn}
}

func (a fnAgent) Card() agents.Card {
	return agents.Card{Name: a.name, Version: "1.0.0", Capabilities: []string{a.name}, Description: "test agent " + a.name}
}

func (a fnAgent) Handle(ctx context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
	a.calls.Add(1)
	return a.fn(ctx, req)
}

// control sends a control action the way the gateway does and returns the result.
func control(t *testing.T, b *bus.Bus, tenant, workflow string, c events.Control) events.ControlResult {
	t.Helper()
	subj, err := subjects.Control(tenant, workflow)
	if err != nil {
		t.Fatal(err)
	}
	env, err := events.New(events.TypeControl, fmt.Sprintf("ctl-%d", time.Now().UnixNano()), "/test", tenant, workflow, "", c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := b.Request(ctx, subj, env)
	if err != nil {
		t.Fatalf("control %s: %v", c.Action, err)
	}
	var res events.ControlResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("control answer %s: %v", out, err)
	}
	return res
}

// waitFor waits until cond holds or fails at the deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 20s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func statuses(rs []bus.Record, step string) []events.Status {
	var out []events.Status
	for _, r := range rs {
		var st events.Status
		if r.Envelope.Type == events.TypeStatus && json.Unmarshal(r.Envelope.Data, &st) == nil && st.StepID == step {
			out = append(out, st)
		}
	}
	return out
}

func TestCancelStopsRunningStepAndNothingMoreIsDispatched(t *testing.T) {
	observed := make(chan struct{})
	block := newFn("block", func(ctx context.Context, _ agents.Request) (json.RawMessage, error) {
		<-ctx.Done()
		close(observed)
		return nil, ctx.Err()
	})
	s := startStack(t, block)
	submit(t, s.env.Bus, "default", "to-cancel", events.WorkflowSubmitted{Plan: plan(step("A", "block"), step("B", "echo", "A"))})
	waitFor(t, "step A running", func() bool { return block.calls.Load() == 1 })
	res := control(t, s.env.Bus, "default", "to-cancel", events.Control{Action: events.ActionCancel, Reason: "user changed their mind"})
	if !res.Applied || res.Status != events.StateCanceled {
		t.Fatalf("cancel: %+v", res)
	}
	select {
	case <-observed:
	case <-time.After(10 * time.Second):
		t.Fatal("the running step's ctx was not cancelled")
	}
	rs := collect(t, s.env.Bus, "default", "to-cancel")
	end := last(t, rs)
	if end.Type != events.TypeCancelled || !strings.Contains(string(end.Data), "changed their mind") {
		t.Fatalf("ended with %s %s", end.Type, end.Data)
	}
	if len(statuses(rs, "B")) != 0 {
		t.Fatalf("B was dispatched after the cancel: %v", statuses(rs, "B"))
	}
	// A second cancel does not apply; the workflow stays canceled.
	if again := control(t, s.env.Bus, "default", "to-cancel", events.Control{Action: events.ActionCancel}); again.Applied {
		t.Fatalf("second cancel applied: %+v", again)
	}
	// A redelivered (here: republished) step of the canceled workflow is not run.
	subj, _ := subjects.Step("default", "block")
	req, _ := events.New(events.TypeStepRequested, "again", "/test", "default", "to-cancel", "A",
		events.StepRequested{StepID: "A", Capability: "block", Attempt: 1})
	if _, err := s.env.Bus.Publish(t.Context(), subj, req, "again"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the republished step consumed", func() bool {
		st, err := s.env.Bus.JetStream().Stream(t.Context(), subjects.StreamSteps)
		if err != nil {
			return false
		}
		info, err := st.Info(t.Context())
		return err == nil && info.State.Msgs == 0
	})
	if n := block.calls.Load(); n != 1 {
		t.Fatalf("the canceled workflow's step ran %d times", n)
	}
	cp, err := s.orch.Checkpoint(t.Context(), "default", "to-cancel")
	if err != nil || cp.Status != events.StateCanceled || cp.Canceled != "user changed their mind" {
		t.Fatalf("checkpoint %+v %v", cp, err)
	}
}

func TestResumeFailedWorkflowKeepsCompletedSteps(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	first := newFn("first", func(_ context.Context, req agents.Request) (json.RawMessage, error) {
		return json.RawMessage(`"first done"`), nil
	})
	flaky := newFn("flaky", func(_ context.Context, req agents.Request) (json.RawMessage, error) {
		if fail.Load() {
			return nil, fmt.Errorf("%w: backend down", agents.ErrPermanent)
		}
		return json.Marshal(req.DependencyOutputs)
	})
	s := startStack(t, first, flaky)
	submit(t, s.env.Bus, "default", "resumable", events.WorkflowSubmitted{Plan: plan(step("A", "first"), step("B", "flaky", "A"), step("C", "echo", "B"))})
	if end := last(t, collect(t, s.env.Bus, "default", "resumable")); end.Type != events.TypeError {
		t.Fatalf("want failure first, got %s", end.Type)
	}
	fail.Store(false)
	res := control(t, s.env.Bus, "default", "resumable", events.Control{Action: events.ActionResume})
	if !res.Applied {
		t.Fatalf("resume: %+v", res)
	}
	waitFor(t, "resumed workflow completed", func() bool {
		cp, err := s.orch.Checkpoint(t.Context(), "default", "resumable")
		return err == nil && cp.Status == events.StateCompleted
	})
	cp, _ := s.orch.Checkpoint(t.Context(), "default", "resumable")
	if first.calls.Load() != 1 || cp.ResumeCount != 1 || !strings.Contains(string(cp.Tasks["B"].Output), "first done") {
		t.Fatalf("A ran %d times, resume_count %d, B output %s", first.calls.Load(), cp.ResumeCount, cp.Tasks["B"].Output)
	}
	if again := control(t, s.env.Bus, "default", "resumable", events.Control{Action: events.ActionResume}); again.Applied {
		t.Fatal("a completed workflow was resumed")
	}
}

func TestApprovalApproveRejectAndAuto(t *testing.T) {
	judge := newFn("judge", func(_ context.Context, req agents.Request) (json.RawMessage, error) { return req.Input, nil })
	s := startStack(t, judge)
	approvalPlan := func(confidence float64) *events.Plan {
		in, _ := json.Marshal(map[string]float64{"confidence": confidence})
		return plan(events.PlanStep{ID: "J", Capability: "judge", Input: in, RequiresApproval: true}, step("after", "echo", "J"))
	}
	awaiting := func(wf string) {
		waitFor(t, wf+" awaits approval", func() bool {
			cp, err := s.orch.Checkpoint(t.Context(), "default", wf)
			return err == nil && cp.Status == events.StateInputRequired
		})
	}
	t.Run("approve", func(t *testing.T) {
		submit(t, s.env.Bus, "default", "appr", events.WorkflowSubmitted{Plan: approvalPlan(0.4)})
		awaiting("appr")
		if res := control(t, s.env.Bus, "default", "appr", events.Control{Action: events.ActionApprove, Reason: "looks right"}); !res.Applied {
			t.Fatalf("approve: %+v", res)
		}
		rs := collect(t, s.env.Bus, "default", "appr")
		if last(t, rs).Type != events.TypeComplete {
			t.Fatalf("approved workflow ended %s", last(t, rs).Type)
		}
		var waited bool
		for _, st := range statuses(rs, "J") {
			waited = waited || (st.State == events.StateInputRequired && strings.Contains(st.Message, "awaits approval"))
		}
		if !waited {
			t.Fatal("no input-required event said what awaits a decision")
		}
	})
	t.Run("reject", func(t *testing.T) {
		submit(t, s.env.Bus, "default", "rej", events.WorkflowSubmitted{Plan: approvalPlan(0.4)})
		awaiting("rej")
		if res := control(t, s.env.Bus, "default", "rej", events.Control{Action: events.ActionReject, Reason: "wrong"}); !res.Applied {
			t.Fatalf("reject: %+v", res)
		}
		end := last(t, collect(t, s.env.Bus, "default", "rej"))
		if end.Type != events.TypeError || !strings.Contains(string(end.Data), events.CodeRejected) {
			t.Fatalf("rejected workflow ended %s %s", end.Type, end.Data)
		}
	})
	t.Run("auto", func(t *testing.T) {
		submit(t, s.env.Bus, "default", "auto", events.WorkflowSubmitted{Plan: approvalPlan(0.9)})
		rs := collect(t, s.env.Bus, "default", "auto")
		if last(t, rs).Type != events.TypeComplete {
			t.Fatalf("auto-approved workflow ended %s", last(t, rs).Type)
		}
		cp, _ := s.orch.Checkpoint(t.Context(), "default", "auto")
		if cp.Tasks["J"].Approval == nil || cp.Tasks["J"].Approval.State != "auto-approved" {
			t.Fatalf("approval %+v", cp.Tasks["J"].Approval)
		}
	})
}

func TestForkFromACheckpointRevision(t *testing.T) {
	first := newFn("first", func(_ context.Context, req agents.Request) (json.RawMessage, error) {
		return json.RawMessage(`"from A"`), nil
	})
	s := startStack(t, first)
	submit(t, s.env.Bus, "default", "origin", events.WorkflowSubmitted{Plan: plan(step("A", "first"), step("B", "echo", "A"), step("C", "echo", "B"))})
	if end := last(t, collect(t, s.env.Bus, "default", "origin")); end.Type != events.TypeComplete {
		t.Fatalf("origin ended %s", end.Type)
	}
	hist, err := s.orch.History(t.Context(), "default", "origin")
	if err != nil {
		t.Fatal(err)
	}
	var rev uint64
	for _, h := range hist {
		if h.Checkpoint.Tasks["A"].Status == events.StateCompleted && h.Checkpoint.Tasks["C"].Status != events.StateCompleted {
			rev = h.Revision
			break
		}
	}
	if rev == 0 {
		t.Fatalf("no revision with A done and C not among %d", len(hist))
	}
	submit(t, s.env.Bus, "default", "forked", events.WorkflowSubmitted{Fork: &events.ForkOf{WorkflowID: "origin", Revision: rev}})
	end := last(t, collect(t, s.env.Bus, "default", "forked"))
	if end.Type != events.TypeComplete || !strings.Contains(string(end.Data), "from A") {
		t.Fatalf("fork ended %s %s", end.Type, end.Data)
	}
	cp, _ := s.orch.Checkpoint(t.Context(), "default", "forked")
	if first.calls.Load() != 1 || cp.Parent == nil || cp.Parent.WorkflowID != "origin" || cp.Parent.Revision != rev {
		t.Fatalf("A ran %d times; parent %+v", first.calls.Load(), cp.Parent)
	}
	submit(t, s.env.Bus, "default", "bad-fork", events.WorkflowSubmitted{Fork: &events.ForkOf{WorkflowID: "origin", Revision: 999999}})
	if end := last(t, collect(t, s.env.Bus, "default", "bad-fork")); end.Type != events.TypeError || !strings.Contains(string(end.Data), "revision") {
		t.Fatalf("bad fork ended %s %s", end.Type, end.Data)
	}
}

func TestOptionalStepsAndFallbacks(t *testing.T) {
	broken := newFn("broken", func(context.Context, agents.Request) (json.RawMessage, error) {
		return nil, fmt.Errorf("%w: always", agents.ErrPermanent)
	})
	s := startStack(t, broken)
	submit(t, s.env.Bus, "default", "partial", events.WorkflowSubmitted{Plan: plan(
		step("A", "echo"),
		events.PlanStep{ID: "B", Capability: "broken", DependsOn: []string{"A"}, Optional: true},
		events.PlanStep{ID: "C", Capability: "broken", DependsOn: []string{"A"}, Fallback: "echo"},
		step("D", "echo", "B", "C"),
	)})
	rs := collect(t, s.env.Bus, "default", "partial")
	end := last(t, rs)
	if end.Type != events.TypeComplete {
		t.Fatalf("ended %s %s", end.Type, end.Data)
	}
	cp, _ := s.orch.Checkpoint(t.Context(), "default", "partial")
	if cp.Tasks["B"].Status != events.StateFailed || cp.Tasks["C"].FellBack != "echo" || cp.Tasks["C"].Status != events.StateCompleted {
		t.Fatalf("B %s, C fell back to %q and is %s", cp.Tasks["B"].Status, cp.Tasks["C"].FellBack, cp.Tasks["C"].Status)
	}
	var c events.Complete
	if err := json.Unmarshal(end.Data, &c); err != nil || !c.Partial || string(c.Outputs["B"]) != "null" {
		t.Fatalf("the complete event does not say the results are partial: %s (%v)", end.Data, err)
	}
	for _, st := range statuses(rs, "") {
		if st.State == events.StateCompleted {
			t.Errorf("a workflow-level completed status beside the complete event: %+v", st)
		}
	}
}

func TestWorkflowDeadlineFailsAndCancelsRunningSteps(t *testing.T) {
	observed := make(chan struct{})
	block := newFn("block", func(ctx context.Context, _ agents.Request) (json.RawMessage, error) {
		<-ctx.Done()
		close(observed)
		return nil, ctx.Err()
	})
	s := startStack(t, block)
	submit(t, s.env.Bus, "default", "late", events.WorkflowSubmitted{Plan: plan(step("A", "block")), TimeoutMS: 300})
	end := last(t, collect(t, s.env.Bus, "default", "late"))
	var e events.Error
	if end.Type != events.TypeError || json.Unmarshal(end.Data, &e) != nil || e.Code != events.CodeTimeout || !strings.Contains(e.Message, "300ms") {
		t.Fatalf("ended %s %s", end.Type, end.Data)
	}
	select {
	case <-observed:
	case <-time.After(10 * time.Second):
		t.Fatal("the running step was not cancelled at the deadline")
	}
	// A workflow that finishes in time is not touched by its timer.
	submit(t, s.env.Bus, "default", "early", events.WorkflowSubmitted{Query: "quick", TimeoutMS: 200})
	if end := last(t, collect(t, s.env.Bus, "default", "early")); end.Type != events.TypeComplete {
		t.Fatalf("early ended %s", end.Type)
	}
	waitFor(t, "the spent timer consumed", func() bool {
		st, err := s.env.Bus.JetStream().Stream(t.Context(), subjects.StreamReplies)
		if err != nil {
			return false
		}
		info, err := st.Info(t.Context())
		return err == nil && info.State.Msgs == 0
	})
	cp, _ := s.orch.Checkpoint(t.Context(), "default", "early")
	if cp.Status != events.StateCompleted {
		t.Fatalf("early workflow is %s after its deadline", cp.Status)
	}
}
