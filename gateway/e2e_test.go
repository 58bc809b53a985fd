package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

// Plans that pass the schema but not the planner are accepted (the
// submission is durable) and fail on the event stream, naming the culprit.
func TestBadPlansEndWithAnErrorFrame(t *testing.T) {
	s := startStack(t)
	cases := []struct {
		name, code, step, pointer, says string
		plan                            map[string]any
	}{
		{"cycle", events.CodeCycle, "A", "/plan/steps/0/depends_on", "cycle",
			plan("A:echo:C", "B:echo:A", "C:echo:B")},
		{"unknown capability", events.CodeUnknownCapability, "B", "/plan/steps/1/capability", `"teleport"`,
			plan("A:echo", "B:teleport:A")},
		{"unknown dependency", events.CodeUnknownDependency, "B", "/plan/steps/1/depends_on/0", `"Z"`,
			plan("A:echo", "B:echo:Z")},
		{"duplicate step id", events.CodeInvalidPlan, "A", "/plan/steps/1/id", "twice",
			plan("A:echo", "A:echo")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sub := s.mustSubmit(t, map[string]any{"plan": c.plan})
			if sub.Status != "accepted" {
				t.Errorf("submit status %q, want accepted", sub.Status)
			}
			_, fs := s.mustFollow(t, sub.EventsURL)
			end := fs[len(fs)-1]
			if end.Type != "error" || end.StepID != c.step {
				t.Fatalf("stream ended with %s (step %q) %s, want error naming step %s", end.Type, end.StepID, end.Data, c.step)
			}
			var e events.Error
			if err := json.Unmarshal(end.Data, &e); err != nil {
				t.Fatal(err)
			}
			if e.Code != c.code || e.StepID != c.step || e.Pointer != c.pointer || !strings.Contains(e.Message, c.says) {
				t.Fatalf("error frame %+v, want code %s step %s pointer %s mentioning %s", e, c.code, c.step, c.pointer, c.says)
			}
			st := s.state(t, sub.StateURL)
			if st["status"] != "failed" {
				t.Fatalf("state status %v, want failed", st["status"])
			}
		})
	}
	// The server keeps serving after bad plans.
	sub := s.mustSubmit(t, map[string]any{"query": "still alive"})
	if _, fs := s.mustFollow(t, sub.EventsURL); fs[len(fs)-1].Type != "complete" {
		t.Fatalf("after bad plans the next workflow ended with %s", fs[len(fs)-1].Type)
	}
}

func TestConcurrentWorkflowsAllComplete(t *testing.T) {
	s := startStack(t)
	const n = 20
	ctx, cancel := context.WithTimeout(context.Background(), 2*deadline)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			// Even ones are bare queries, echoed back; odd ones diamonds
			// whose result is the sink D's output.
			body, want := map[string]any{"query": fmt.Sprintf("query %d", i)}, fmt.Sprintf("query %d", i)
			if i%2 == 1 {
				body["plan"], want = plan("A:echo", "B:echo:A", "C:echo:A", "D:echo:B,C"), `"step_id":"D"`
			}
			sub, err := s.submit(ctx, body)
			if err != nil {
				errs <- fmt.Errorf("workflow %d: %w", i, err)
				return
			}
			c, fs, err := s.follow(ctx, sub.EventsURL)
			if err != nil {
				errs <- fmt.Errorf("workflow %d (%s): %w", i, sub.WorkflowID, err)
				return
			}
			end := fs[len(fs)-1]
			if c.WorkflowID != sub.WorkflowID || end.Type != "complete" || !strings.Contains(string(end.Data), want) {
				errs <- fmt.Errorf("workflow %d (%s): stream of %s ended with %s %s", i, sub.WorkflowID, c.WorkflowID, end.Type, end.Data)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// With no orchestrator running a submission is still durable: past the
// accept timeout the answer is 202 "queued", a retried POST is the same
// submission, and the workflow runs once an orchestrator starts.
func TestQueuedSubmissionRunsWhenAnOrchestratorStarts(t *testing.T) {
	env := bustest.New(t)
	s := startGateway(t, env, func(c *gateway.Config) { c.AcceptTimeout = 100 * time.Millisecond })
	body := map[string]any{"workflow_id": "later", "query": "wait for me"}
	for range 2 {
		if sub := s.mustSubmit(t, body); sub.Status != "queued" || sub.WorkflowID != "later" {
			t.Fatalf("submit with no orchestrator: %+v, want status queued", sub)
		}
	}
	// Nothing recorded it yet, so the gateway does not know it; clients
	// such as `agentbus ask` retry a 404 for a while.
	wantError(t, "GET state of a queued workflow", s.mustDo(t, http.MethodGet, "/v1/workflows/later", nil), http.StatusNotFound, "not_found")

	startBackend(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	kv, err := env.Bus.KV(ctx, subjects.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	key, err := subjects.CheckpointKey(gateway.DefaultTenant, "later")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Wait(ctx, key); err != nil {
		t.Fatalf("the orchestrator never recorded the queued workflow: %v", err)
	}
	_, fs := s.mustFollow(t, "/v1/workflows/later/events")
	if end := fs[len(fs)-1]; end.Type != "complete" || !strings.Contains(string(end.Data), "wait for me") {
		t.Fatalf("queued workflow ended with %s %s", end.Type, end.Data)
	}
	// The retried POST did not start it twice.
	starts := 0
	for _, f := range fs {
		var st events.Status
		if f.Type == "status" && json.Unmarshal(f.Data, &st) == nil && f.StepID == "" && st.State == events.StateSubmitted {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("%d workflow-submitted status events, want 1", starts)
	}
}
