package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// TestTwoWorkersShareOneCapability runs 40 one-step workflows of one
// capability on two workers (two connections, one shared durable consumer):
// every step is handled exactly once in total, and both workers work.
// (Forty workflows rather than one 40-step plan keep the orchestrator's
// checkpoint contention out of a test about workers.)
func TestTwoWorkersShareOneCapability(t *testing.T) {
	env := bustest.New(t)
	startOrchestrator(t, env.Bus)
	var perStep counter
	var byWorker [2]atomic.Int64
	var redelivered atomic.Int64
	for i, name := range []string{"worker-a", "worker-b"} {
		a := newAgent("work", func(ctx context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
			perStep.add(req.WorkflowID + "/" + req.StepID)
			byWorker[i].Add(1)
			if req.Delivery != 1 {
				redelivered.Add(1)
			}
			// A few ms of simulated work, so that one worker cannot drain
			// the queue before the other asks.
			timer := time.NewTimer(5 * time.Millisecond)
			defer timer.Stop()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-timer.C:
			}
			return json.Marshal(map[string]string{"workflow": req.WorkflowID, "worker": name})
		})
		startWorker(t, agents.WorkerConfig{Bus: bustest.Connect(t, env), Name: name, Agents: []agents.Agent{a}, Concurrency: 1})
	}

	const n = 40
	workflows := make([]string, n)
	for i := range workflows {
		workflows[i] = fmt.Sprintf("wf-%02d", i)
		submit(t, env.Bus, "default", workflows[i], events.WorkflowSubmitted{Query: "work", Plan: plan(step("S", "work", i))})
	}
	seen := map[string]int{}
	for _, wf := range workflows {
		c := completed(t, collect(t, env.Bus, "default", wf))
		var o struct{ Workflow, Worker string }
		if err := json.Unmarshal(c.Result, &o); err != nil || o.Workflow != wf {
			t.Fatalf("result of %s: %s (%v)", wf, c.Result, err)
		}
		seen[o.Worker]++
	}
	waitStreamEmpty(t, env.Bus, subjects.StreamSteps)

	counts := perStep.snapshot()
	for _, wf := range workflows {
		if counts[wf+"/S"] != 1 {
			t.Errorf("step S of %s handled %d times in total, want exactly once", wf, counts[wf+"/S"])
		}
	}
	if len(counts) != n {
		t.Errorf("handled %d distinct steps, want %d: %v", len(counts), n, counts)
	}
	a, b := byWorker[0].Load(), byWorker[1].Load()
	if a == 0 || b == 0 || a+b != n {
		t.Errorf("worker-a handled %d, worker-b %d: want both above 0 and %d in total", a, b, n)
	}
	if r := redelivered.Load(); r != 0 {
		t.Errorf("%d deliveries were redeliveries, want none", r)
	}
	// Each result names the worker that produced it.
	if seen["worker-a"] != int(a) || seen["worker-b"] != int(b) {
		t.Errorf("results by worker %v disagree with handler counts a=%d b=%d", seen, a, b)
	}
}

// TestShutdownHandsBackInFlightStep stops a worker whose handler is still
// running past ShutdownGrace: the handler sees its context cancelled, the
// step is handed back at once, and another worker completes the workflow.
func TestShutdownHandsBackInFlightStep(t *testing.T) {
	env := bustest.New(t)
	startOrchestrator(t, env.Bus)

	entered := make(chan agents.Request, 1)
	var sawCancel atomic.Bool
	holder := newAgent("hold", func(ctx context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
		entered <- req
		<-ctx.Done()
		sawCancel.Store(true)
		return nil, ctx.Err()
	})
	a := startWorker(t, agents.WorkerConfig{
		Bus: bustest.Connect(t, env), Name: "worker-a", Agents: []agents.Agent{holder},
		ShutdownGrace: 100 * time.Millisecond,
	})

	submit(t, env.Bus, "default", "handback", events.WorkflowSubmitted{Query: "hold it", Plan: plan(step("H", "hold", "payload"))})
	var first agents.Request
	select {
	case first = <-entered:
	case <-time.After(deadline):
		t.Fatal("worker-a never received the step")
	}
	if first.Delivery != 1 || first.StepID != "H" {
		t.Fatalf("worker-a got %+v, want step H on delivery 1", first)
	}

	// Worker B starts while A holds the step; it must not get it until A
	// hands it back (A's in-progress acks keep it).
	var bCalls atomic.Int64
	var bDelivery atomic.Int64
	finisher := newAgent("hold", func(_ context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
		bCalls.Add(1)
		bDelivery.Store(int64(req.Delivery))
		return json.Marshal(map[string]string{"finished_by": "worker-b", "input": string(req.Input)})
	})
	startWorker(t, agents.WorkerConfig{Bus: bustest.Connect(t, env), Name: "worker-b", Agents: []agents.Agent{finisher}})

	if err := a.stop(t); err != nil {
		t.Errorf("worker-a Run returned %v, want nil", err)
	}
	if !sawCancel.Load() {
		t.Error("worker-a's handler returned without seeing its context cancelled")
	}

	rs := collect(t, env.Bus, "default", "handback")
	c := completed(t, rs)
	if string(c.Result) != `{"finished_by":"worker-b","input":"\"payload\""}` {
		t.Errorf("result %s, want worker-b's output for the original input", c.Result)
	}
	if got := bCalls.Load(); got != 1 {
		t.Errorf("worker-b handled the step %d times, want once", got)
	}
	if got := bDelivery.Load(); got != 2 {
		t.Errorf("worker-b saw Request.Delivery %d, want 2 (the hand-back is a redelivery)", got)
	}
	// A's failure is not reported as the step's failure.
	for _, r := range rs {
		if r.Envelope.Type == events.TypeError {
			t.Errorf("an error event was emitted during hand-back:%s", describe(rs))
		}
	}
	waitStreamEmpty(t, env.Bus, subjects.StreamSteps)
}
