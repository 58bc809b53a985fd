package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

// TestFailingStepsAreRetriedThenDeadLettered runs one failing step per case
// through a real orchestrator and worker and checks the delivery policy:
// how often the handler ran, what the dead letter says, and that the
// workflow fails with an error event naming the step instead of hanging.
func TestFailingStepsAreRetriedThenDeadLettered(t *testing.T) {
	cases := []struct {
		name string
		cfg  agents.WorkerConfig
		// handle fails the step; it is called with the call number from 1.
		handle    func(ctx context.Context, call int64) error
		wantCalls int64
		// wantReason is in the handler's error and must reach the dead
		// letter and the workflow's error event.
		wantReason string
	}{
		{
			name: "error",
			cfg:  agents.WorkerConfig{MaxDeliver: 3, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond},
			handle: func(context.Context, int64) error {
				return errors.New("upstream said no")
			},
			wantCalls: 3, wantReason: "upstream said no",
		},
		{
			name: "permanent",
			cfg:  agents.WorkerConfig{MaxDeliver: 3, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond},
			handle: func(context.Context, int64) error {
				return fmt.Errorf("bad input shape: %w", agents.ErrPermanent)
			},
			wantCalls: 1, wantReason: "bad input shape",
		},
		{
			name: "panic",
			cfg:  agents.WorkerConfig{MaxDeliver: 3, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond},
			handle: func(_ context.Context, call int64) error {
				panic(fmt.Sprintf("kaboom %d", call))
			},
			wantCalls: 3, wantReason: "panicked: kaboom 3",
		},
		{
			name: "timeout",
			cfg: agents.WorkerConfig{MaxDeliver: 2, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
				StepTimeout: 200 * time.Millisecond},
			handle: func(ctx context.Context, _ int64) error {
				<-ctx.Done()
				return ctx.Err()
			},
			wantCalls: 2, wantReason: "timed out",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := bustest.New(t)
			startOrchestrator(t, env.Bus)
			var calls atomic.Int64
			var deliveries counter
			capability := "fail-" + c.name
			bad := newAgent(capability, func(ctx context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
				n := calls.Add(1)
				deliveries.add(fmt.Sprint(req.Delivery))
				return nil, c.handle(ctx, n)
			})
			cfg := c.cfg
			cfg.Bus, cfg.Agents = env.Bus, []agents.Agent{bad, echo.Agent{}}
			cfg.Name = "worker-" + c.name
			startWorker(t, cfg)

			const tenant, workflow = "acme", "wf-fail"
			rs := runWorkflow(t, env.Bus, tenant, workflow, plan(step("A", capability, "x")))
			e := failed(t, rs)
			if e.StepID != "A" || !strings.Contains(e.Message, c.wantReason) {
				t.Errorf("error event %+v: want step_id A and a message containing %q", e, c.wantReason)
			}
			if got := calls.Load(); got != c.wantCalls {
				t.Errorf("handler invoked %d times, want exactly %d (deliveries seen: %v)", got, c.wantCalls, deliveries.snapshot())
			}
			for d := 1; d <= int(c.wantCalls); d++ {
				if n := deliveries.snapshot()[fmt.Sprint(d)]; n != 1 {
					t.Errorf("Request.Delivery %d seen %d times, want once (all: %v)", d, n, deliveries.snapshot())
				}
			}

			m := deadLetter(t, env.Bus, tenant, capability)
			if want, _ := subjects.DeadLetter(tenant, capability); m.Subject != want {
				t.Errorf("dead letter on %q, want %q", m.Subject, want)
			}
			reason := m.Header.Get(bus.HeaderDeadLetterReason)
			if !strings.Contains(reason, c.wantReason) {
				t.Errorf("%s = %q, want it to contain %q", bus.HeaderDeadLetterReason, reason, c.wantReason)
			}
			if got, want := m.Header.Get(bus.HeaderDeadLetterCount), fmt.Sprint(c.wantCalls); got != want {
				t.Errorf("%s = %q, want %q", bus.HeaderDeadLetterCount, got, want)
			}
			if got := m.Header.Get(bus.HeaderDeadLetterBy); got != cfg.Name {
				t.Errorf("%s = %q, want the worker name %q", bus.HeaderDeadLetterBy, got, cfg.Name)
			}
			if got, want := m.Header.Get(bus.HeaderDeadLetterSubject), "agentbus.acme.step."+capability; got != want {
				t.Errorf("%s = %q, want %q", bus.HeaderDeadLetterSubject, got, want)
			}
			// The dead letter keeps the step itself, headers and body.
			if m.Header.Get("ce-stepid") != "A" || m.Header.Get("ce-workflowid") != workflow || !strings.Contains(string(m.Data), `"step_id":"A"`) {
				t.Errorf("dead letter lost the step: headers %v, data %s", m.Header, m.Data)
			}
			if !strings.Contains(e.Message, reason) {
				t.Errorf("error event message %q does not carry the dead-letter reason %q", e.Message, reason)
			}
			waitStreamEmpty(t, env.Bus, subjects.StreamSteps)

			// The worker process survived and still serves.
			completed(t, runWorkflow(t, env.Bus, tenant, "wf-after", plan(step("E", echo.Capability, "still here"))))
			if got := calls.Load(); got != c.wantCalls {
				t.Errorf("handler invoked %d times by the end, want %d", got, c.wantCalls)
			}
		})
	}
}

// TestSlowStepIsNotRedelivered checks in-progress acks: a handler that runs
// for 3.5 AckWaits is delivered once and its workflow completes.
func TestSlowStepIsNotRedelivered(t *testing.T) {
	env := bustest.New(t)
	startOrchestrator(t, env.Bus)
	var calls atomic.Int64
	var firstDelivery atomic.Int64
	slow := newAgent("slow", func(ctx context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
		if calls.Add(1) == 1 {
			firstDelivery.Store(int64(req.Delivery))
		}
		// Simulated work, not a wait for an event.
		timer := time.NewTimer(3500 * time.Millisecond)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
		return json.Marshal(map[string]int{"delivery": req.Delivery})
	})
	startWorker(t, agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{slow}, AckWait: time.Second})

	c := completed(t, runWorkflow(t, env.Bus, "default", "slow", plan(step("S", "slow", nil))))
	if got := calls.Load(); got != 1 {
		t.Errorf("slow handler invoked %d times, want once: in-progress acks did not hold the step", got)
	}
	if got := firstDelivery.Load(); got != 1 {
		t.Errorf("Request.Delivery = %d, want 1", got)
	}
	if string(c.Result) != `{"delivery":1}` {
		t.Errorf("result %s, want {\"delivery\":1}", c.Result)
	}
	waitStreamEmpty(t, env.Bus, subjects.StreamSteps)
}
