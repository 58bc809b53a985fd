package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/internal/stacktest"
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

// blocker is a "block" agent whose steps run until their ctx ends; it
// reports each step's start and end by workflow id.
type blocker struct {
	fnAgent
	started, stopped chan string
}

func newBlocker() blocker {
	b := blocker{started: make(chan string, 16), stopped: make(chan string, 16)}
	b.fnAgent = newFn("block", func(ctx context.Context, req agents.Request) (json.RawMessage, error) {
		// Sends never block: a full channel must not hold up the
		// worker's shutdown.
		select {
		case b.started <- req.WorkflowID:
		default:
		}
		<-ctx.Done()
		select {
		case b.stopped <- req.WorkflowID:
		default:
		}
		return nil, ctx.Err()
	})
	return b
}

// startStackWith is startStack with extra agents on the worker beside echo.
func startStackWith(t testing.TB, extra ...agents.Agent) *stack {
	t.Helper()
	env := bustest.New(t)
	stacktest.StartOn(t, env, stacktest.Options{Agents: extra})
	return startGateway(t, env)
}

// await receives want from c, or fails the test at the deadline.
func await(t testing.TB, what string, c <-chan string, want string) {
	t.Helper()
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for {
		select {
		case got := <-c:
			if got == want {
				return
			}
		case <-timer.C:
			t.Fatalf("not within %s: %s", deadline, what)
		}
	}
}

// controlResult is the 200/409 answer of POST …/cancel|resume|approve.
type controlResult struct {
	WorkflowID string `json:"workflow_id"`
	Status     string `json:"status"`
	Applied    bool   `json:"applied"`
	Message    string `json:"message"`
}

// ctl POSTs a control action and decodes a 200 or 409 answer, checking
// that applied matches the status code.
func (s *stack) ctl(t testing.TB, id, action, body string, wantStatus int, header ...string) controlResult {
	t.Helper()
	path := "/v1/workflows/" + id + "/" + action
	r := s.mustDo(t, http.MethodPost, path, []byte(body), header...)
	if r.Status != wantStatus {
		t.Fatalf("POST %s %s: status %d, want %d: %s", path, body, r.Status, wantStatus, r.Body)
	}
	var res controlResult
	if err := json.Unmarshal(r.Body, &res); err != nil {
		t.Fatalf("POST %s: body %q: %v", path, r.Body, err)
	}
	if res.WorkflowID != id || res.Applied != (wantStatus == http.StatusOK) || res.Message == "" {
		t.Fatalf("POST %s: answer %+v, want workflow %s, applied %v and a message", path, res, id, wantStatus == http.StatusOK)
	}
	return res
}

// hasPointer reports whether an error answer has a problem at pointer.
func hasPointer(e apiErr, pointer string) bool {
	for _, p := range e.Error.Problems {
		if p.Pointer == pointer {
			return true
		}
	}
	return false
}

// errorData decodes an `error` frame's data.
func errorData(t testing.TB, f frame) events.Error {
	t.Helper()
	var e events.Error
	if f.Type != "error" || json.Unmarshal(f.Data, &e) != nil {
		t.Fatalf("frame %d is %s %s, want an error frame", f.Offset, f.Type, f.Data)
	}
	return e
}

// awaitStepState reads a workflow's stream until a status frame puts step
// in state, or fails the test.
func (s *stack) awaitStepState(t testing.TB, eventsURL, step, state string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	seen := false
	st, err := s.readSSE(ctx, eventsURL, func(sf sseFrame, _ []string) error {
		var f frame
		var data events.Status
		if sf.Event != "status" || json.Unmarshal([]byte(sf.Data), &f) != nil || json.Unmarshal(f.Data, &data) != nil {
			return nil
		}
		if f.StepID == step && string(data.State) == state {
			seen = true
			return errStopReading
		}
		return nil
	})
	if err != nil || !seen {
		t.Fatalf("GET %s: no status frame put step %s in %s (err %v, frames %s)", eventsURL, step, state, err, summary(st.Frames))
	}
}

func TestCancelStopsARunningStep(t *testing.T) {
	block := newBlocker()
	s := startStackWith(t, block)
	sub := s.mustSubmit(t, map[string]any{"workflow_id": "to-cancel", "plan": plan("A:block", "B:echo:A")})
	await(t, "step A running", block.started, "to-cancel")

	// A client following live sees the stream end on the cancellation.
	type followed struct {
		fs  []frame
		err error
	}
	live := make(chan followed, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		_, fs, err := s.follow(ctx, sub.EventsURL)
		live <- followed{fs, err}
	}()

	res := s.ctl(t, "to-cancel", "cancel", `{"reason": "user changed their mind"}`, http.StatusOK)
	if res.Status != "canceled" {
		t.Fatalf("cancel answer %+v, want status canceled", res)
	}
	await(t, "the running step's ctx cancelled", block.stopped, "to-cancel")
	got := <-live
	if got.err != nil {
		t.Fatalf("live follower: %v", got.err)
	}
	end := got.fs[len(got.fs)-1]
	if end.Type != "cancelled" || !strings.Contains(string(end.Data), "changed their mind") {
		t.Fatalf("stream ended with %s %s, want cancelled carrying the reason", end.Type, end.Data)
	}
	for _, f := range got.fs {
		if f.StepID == "B" {
			t.Fatalf("step B has event %s after the cancel", f.Type)
		}
	}
	if st := s.state(t, sub.StateURL); st["status"] != "canceled" {
		t.Fatalf("state status %v, want canceled", st["status"])
	}

	if again := s.ctl(t, "to-cancel", "cancel", ``, http.StatusConflict); again.Status != "canceled" {
		t.Fatalf("second cancel %+v, want status canceled", again)
	}
	r := s.mustDo(t, http.MethodPost, "/v1/workflows/no-such-workflow/cancel", []byte(`{}`))
	wantError(t, "cancel of an unknown workflow", r, http.StatusNotFound, "not_found")

	// Another tenant cannot see, let alone cancel, the workflow.
	other := s.mustSubmit(t, map[string]any{"workflow_id": "acme-wf", "plan": plan("A:block")}, gateway.TenantHeader, "acme")
	await(t, "acme's step running", block.started, "acme-wf")
	r = s.mustDo(t, http.MethodPost, "/v1/workflows/acme-wf/cancel", []byte(`{}`))
	wantError(t, "cancel of another tenant's workflow", r, http.StatusNotFound, "not_found")
	r = s.mustDo(t, http.MethodPost, "/v1/workflows/acme-wf/cancel", []byte(`{}`), gateway.TenantHeader, "other")
	wantError(t, "cancel as tenant other", r, http.StatusNotFound, "not_found")
	if st := s.state(t, other.StateURL, gateway.TenantHeader, "acme"); st["status"] != "working" {
		t.Fatalf("acme's workflow is %v after foreign cancels, want working", st["status"])
	}
	s.ctl(t, "acme-wf", "cancel", `{}`, http.StatusOK, gateway.TenantHeader, "acme")
	await(t, "acme's step cancelled", block.stopped, "acme-wf")
}

func TestControlRejectsBadBodies(t *testing.T) {
	s := startStack(t)
	sub := s.mustSubmit(t, map[string]any{"workflow_id": "done", "query": "hi"})
	s.mustFollow(t, sub.EventsURL)
	for _, action := range []string{"cancel", "resume", "approve"} {
		path := "/v1/workflows/done/" + action
		t.Run(action, func(t *testing.T) {
			cases := []struct{ body, pointer string }{
				{`{"nope": 1}`, "/nope"},
				{`{"approve": "yes"}`, "/approve"},
				{`{"step_id": "a b"}`, "/step_id"},
				{`[]`, ""},
				{`{"reason": `, ""},
			}
			for _, c := range cases {
				r := s.mustDo(t, http.MethodPost, path, []byte(c.body))
				e := wantError(t, "POST "+path+" "+c.body, r, http.StatusBadRequest, "invalid_request")
				if !hasPointer(e, c.pointer) {
					t.Errorf("POST %s %s: problems lack pointer %q: %s", path, c.body, c.pointer, r.Body)
				}
			}
			big := append([]byte(`{"reason": "`), bytes.Repeat([]byte("a"), 1<<20)...)
			big = append(big, `"}`...)
			r := s.mustDo(t, http.MethodPost, path, big)
			wantError(t, "POST "+path+" over 1 MiB", r, http.StatusRequestEntityTooLarge, "too_large")
		})
	}
}

func TestApproveAndReject(t *testing.T) {
	judge := newFn("judge", func(_ context.Context, req agents.Request) (json.RawMessage, error) { return req.Input, nil })
	block := newBlocker()
	s := startStackWith(t, judge, block)
	approvalPlan := map[string]any{"steps": []map[string]any{
		{"id": "J", "capability": "judge", "input": map[string]any{"confidence": 0.4}, "requires_approval": true},
		{"id": "after", "capability": "echo", "depends_on": []string{"J"}},
	}}

	appr := s.mustSubmit(t, map[string]any{"workflow_id": "appr", "plan": approvalPlan})
	s.awaitStepState(t, appr.EventsURL, "J", "input-required")
	if st := s.state(t, appr.StateURL); st["status"] != "input-required" {
		t.Fatalf("state status %v, want input-required", st["status"])
	}
	s.ctl(t, "appr", "approve", `{"comment": "looks right"}`, http.StatusOK)
	_, fs := s.mustFollow(t, appr.EventsURL)
	if end := fs[len(fs)-1]; end.Type != "complete" {
		t.Fatalf("approved workflow ended with %s %s", end.Type, end.Data)
	}
	if st := s.state(t, appr.StateURL); st["status"] != "completed" {
		t.Fatalf("approved workflow's state %v", st["status"])
	}

	rej := s.mustSubmit(t, map[string]any{"workflow_id": "rej", "plan": approvalPlan})
	s.awaitStepState(t, rej.EventsURL, "J", "input-required")
	s.ctl(t, "rej", "approve", `{"approve": false, "comment": "no"}`, http.StatusOK)
	_, fs = s.mustFollow(t, rej.EventsURL)
	if e := errorData(t, fs[len(fs)-1]); e.Code != events.CodeRejected || e.StepID != "J" {
		t.Fatalf("rejected workflow's error %+v, want code %s naming J", e, events.CodeRejected)
	}
	for _, f := range fs {
		if f.StepID == "after" {
			t.Fatalf("step after has event %s after the rejection", f.Type)
		}
	}

	// Nothing awaits a decision: in a running workflow, and in finished ones.
	s.mustSubmit(t, map[string]any{"workflow_id": "running", "plan": plan("A:block")})
	await(t, "step A running", block.started, "running")
	if res := s.ctl(t, "running", "approve", `{}`, http.StatusConflict); res.Status != "working" {
		t.Fatalf("approve with nothing awaiting: %+v", res)
	}
	s.ctl(t, "running", "approve", `{"approve": false}`, http.StatusConflict)
	s.ctl(t, "appr", "approve", `{}`, http.StatusConflict)
	s.ctl(t, "rej", "approve", `{"step_id": "J"}`, http.StatusConflict)
	// Stop the blocked step rather than wait out the worker's shutdown grace.
	s.ctl(t, "running", "cancel", `{}`, http.StatusOK)
	await(t, "the blocked step cancelled", block.stopped, "running")
}

func TestWorkflowTimeoutEndsWithATimeoutError(t *testing.T) {
	block := newBlocker()
	s := startStackWith(t, block)
	sub := s.mustSubmit(t, map[string]any{"workflow_id": "late", "plan": plan("A:block"), "timeout_ms": 300})
	_, fs := s.mustFollow(t, sub.EventsURL)
	if e := errorData(t, fs[len(fs)-1]); e.Code != events.CodeTimeout {
		t.Fatalf("error %+v, want code %s", e, events.CodeTimeout)
	}
	await(t, "the running step cancelled at the deadline", block.stopped, "late")
	if st := s.state(t, sub.StateURL); st["status"] != "failed" {
		t.Fatalf("state status %v, want failed", st["status"])
	}
}
