package orchestrator_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/workflow"
)

func waitStep(id, input string, deps ...string) events.PlanStep {
	return events.PlanStep{ID: id, Capability: workflow.CapabilityWait, Input: json.RawMessage(input), DependsOn: deps}
}

// stepState waits until a step of a workflow is in state s, and returns
// the checkpoint then.
func stepState(t *testing.T, o *orchestrator.Orchestrator, wf, step string, s events.State) *workflow.Checkpoint {
	t.Helper()
	var cp *workflow.Checkpoint
	waitFor(t, "step "+step+" "+string(s), func() bool {
		c, err := o.Checkpoint(context.Background(), "acme", wf)
		if err != nil || c.Tasks[step] == nil {
			return false
		}
		cp = c
		return c.Tasks[step].Status == s
	})
	return cp
}

// TestWaitForSignal: a wait step holds no worker while it waits; the
// signal's body is its output, which its dependent gets.
func TestWaitForSignal(t *testing.T) {
	s := startStack(t)
	submit(t, s.env.Bus, "acme", "wf-sig", events.WorkflowSubmitted{Query: "q", Plan: plan(
		waitStep("W", `{"signal":"approved","timeout":"1h"}`), step("B", "echo", "W"))})
	cp := stepState(t, s.orch, "wf-sig", "W", events.StateWorking)
	if w := cp.Tasks["W"]; w.Wait == nil || w.Wait.Signal != "approved" || w.StepSeq != 0 || w.Worker != "" {
		t.Fatalf("W waits as %+v (wait %+v)", w, w.Wait)
	}
	res := control(t, s.env.Bus, "acme", "wf-sig", events.Control{Action: events.ActionSignal, Signal: "approved", Data: json.RawMessage(`{"by":"ana"}`)})
	if !res.Applied || !strings.Contains(res.Message, "received by step W") {
		t.Fatalf("signal: %+v", res)
	}
	rs := collect(t, s.env.Bus, "acme", "wf-sig")
	if last(t, rs).Type != events.TypeComplete {
		t.Fatalf("ended with %s: %s", last(t, rs).Type, describe(rs))
	}
	var out echo.Output
	cp, _ = s.orch.Checkpoint(context.Background(), "acme", "wf-sig")
	if err := json.Unmarshal(cp.Tasks["B"].Output, &out); err != nil || string(out.DependencyOutputs["W"]) != `{"by":"ana"}` {
		t.Fatalf("B got %s (%v)", cp.Tasks["B"].Output, err)
	}
	// A signal to an ended workflow does not apply (the gateway's 409).
	if res := control(t, s.env.Bus, "acme", "wf-sig", events.Control{Action: events.ActionSignal, Signal: "approved"}); res.Applied {
		t.Errorf("signal after the end: %+v", res)
	}
}

// TestWaitSignalSentEarly: a signal sent while an earlier step runs is
// kept for the wait step, which completes with it when reached.
func TestWaitSignalSentEarly(t *testing.T) {
	release := make(chan struct{})
	slow := newFn("slow", func(ctx context.Context, _ agents.Request) (json.RawMessage, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return json.RawMessage(`"slow"`), nil
	})
	s := startStack(t, slow)
	submit(t, s.env.Bus, "acme", "wf-early", events.WorkflowSubmitted{Query: "q", Plan: plan(
		step("A", "slow"), waitStep("W", `{"signal":"go"}`, "A"), step("B", "echo", "W"))})
	stepState(t, s.orch, "wf-early", "A", events.StateWorking)
	res := control(t, s.env.Bus, "acme", "wf-early", events.Control{Action: events.ActionSignal, Signal: "go", Data: json.RawMessage(`[1,2]`)})
	if !res.Applied || !strings.Contains(res.Message, "kept") {
		t.Fatalf("early signal: %+v", res)
	}
	close(release)
	if rs := collect(t, s.env.Bus, "acme", "wf-early"); last(t, rs).Type != events.TypeComplete {
		t.Fatalf("ended with %s: %s", last(t, rs).Type, describe(rs))
	}
	cp, _ := s.orch.Checkpoint(context.Background(), "acme", "wf-early")
	if string(cp.Tasks["W"].Output) != `[1,2]` || len(cp.Signals) != 0 {
		t.Fatalf("W output %s, signals kept %v", cp.Tasks["W"].Output, cp.Signals)
	}
}

// TestWaitTimeout: a wait for a signal that does not come fails the
// workflow, or, with on_timeout continue, lets its dependents run.
func TestWaitTimeout(t *testing.T) {
	s := startStack(t)
	for _, c := range []struct {
		wf, onTimeout string
		want          events.Type
	}{{"wf-fail", "fail", events.TypeError}, {"wf-continue", "continue", events.TypeComplete}} {
		submit(t, s.env.Bus, "acme", c.wf, events.WorkflowSubmitted{Query: "q", Plan: plan(
			waitStep("W", `{"signal":"never","timeout":"200ms","on_timeout":"`+c.onTimeout+`"}`), step("B", "echo", "W"))})
		rs := collect(t, s.env.Bus, "acme", c.wf)
		if got := last(t, rs).Type; got != c.want {
			t.Fatalf("%s: ended with %s: %s", c.onTimeout, got, describe(rs))
		}
		cp, _ := s.orch.Checkpoint(context.Background(), "acme", c.wf)
		switch c.onTimeout {
		case "fail":
			if cp.Error == nil || cp.Error.StepID != "W" || !strings.Contains(cp.Error.Message, `no signal "never" came`) {
				t.Errorf("error %+v", cp.Error)
			}
		case "continue":
			if string(cp.Tasks["W"].Output) != `{"signal":"never","timed_out":true}` {
				t.Errorf("W output %s", cp.Tasks["W"].Output)
			}
		}
	}
}

// TestWaitInputIsChecked: a wait step whose input is not a wait is
// refused when planned, naming where.
func TestWaitInputIsChecked(t *testing.T) {
	s := startStack(t)
	submit(t, s.env.Bus, "acme", "wf-bad", events.WorkflowSubmitted{Query: "q", Plan: plan(waitStep("W", `{"duration":"soon"}`))})
	rs := collect(t, s.env.Bus, "acme", "wf-bad")
	var e events.Error
	if env := last(t, rs); env.Type != events.TypeError || json.Unmarshal(env.Data, &e) != nil || e.Pointer != "/plan/steps/0/input/duration" {
		t.Fatalf("ended with %s %+v", env.Type, e)
	}
}

// TestPauseAcrossRestart: a paused workflow records its running step's
// reply but dispatches nothing; paused it survives its orchestrator's
// restart, and the unpause (answered by the new one) dispatches the rest.
func TestPauseAcrossRestart(t *testing.T) {
	env := bustest.New(t)
	release := make(chan struct{})
	slow := newFn("slow", func(ctx context.Context, _ agents.Request) (json.RawMessage, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return json.RawMessage(`"slow"`), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{echo.Agent{}, slow}, Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	first := runOrchestrator(t, env)
	submit(t, env.Bus, "acme", "wf-pause", events.WorkflowSubmitted{Query: "q", Plan: plan(step("A", "slow"), step("B", "echo", "A"))})
	stepState(t, first.o, "wf-pause", "A", events.StateWorking)
	if res := control(t, env.Bus, "acme", "wf-pause", events.Control{Action: events.ActionPause, Reason: "deploy"}); !res.Applied || res.Status != events.StateWorking {
		t.Fatalf("pause: %+v", res)
	}
	if res := control(t, env.Bus, "acme", "wf-pause", events.Control{Action: events.ActionPause}); res.Applied {
		t.Fatalf("pause twice: %+v", res)
	}
	close(release)
	// The transition that records A's reply is the one that would have
	// dispatched B.
	cp := stepState(t, first.o, "wf-pause", "A", events.StateCompleted)
	if cp.Tasks["B"].Status != events.StateSubmitted || cp.Phase != workflow.PhasePaused || !cp.Paused {
		t.Fatalf("after A, paused: B %s, phase %s", cp.Tasks["B"].Status, cp.Phase)
	}
	first.stop()
	second := runOrchestrator(t, env)
	cp, err = second.o.Checkpoint(context.Background(), "acme", "wf-pause")
	if err != nil || !cp.Paused || cp.Tasks["B"].Status != events.StateSubmitted {
		t.Fatalf("after the restart: %v, %+v", err, cp)
	}
	if res := control(t, env.Bus, "acme", "wf-pause", events.Control{Action: events.ActionUnpause}); !res.Applied {
		t.Fatalf("unpause: %+v", res)
	}
	rs := collect(t, env.Bus, "acme", "wf-pause")
	if last(t, rs).Type != events.TypeComplete {
		t.Fatalf("ended with %s: %s", last(t, rs).Type, describe(rs))
	}
	var paused, unpaused bool
	for _, st := range statuses(rs, "") {
		paused = paused || strings.HasPrefix(st.Message, "paused (deploy)")
		unpaused = unpaused || st.Message == "unpaused"
	}
	if !paused || !unpaused {
		t.Errorf("the events do not say it was paused (%v) and unpaused (%v): %s", paused, unpaused, describe(rs))
	}
}

// running is an orchestrator that a test can stop.
type running struct {
	o    *orchestrator.Orchestrator
	stop func()
}

func runOrchestrator(t *testing.T, env *bustest.Env) running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o, err := orchestrator.New(ctx, orchestrator.Config{Bus: env.Bus, Logger: bustest.Logger(t)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Run(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return running{o: o, stop: stop}
}
