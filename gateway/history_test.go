package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
)

// history is the answer to GET /v1/workflows/{id}/checkpoints.
type history struct {
	WorkflowID string `json:"workflow_id"`
	Revisions  []struct {
		Revision         uint64                     `json:"revision"`
		CheckpointStatus string                     `json:"checkpoint_status"`
		Checkpoint       map[string]json.RawMessage `json:"checkpoint"`
	} `json:"revisions"`
}

// taskStatus is a task's status in a checkpoint ("" if absent).
func taskStatus(cp map[string]json.RawMessage, step string) string {
	var tasks map[string]struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(cp["tasks"], &tasks)
	return tasks[step].Status
}

func TestCheckpointHistoryAndFork(t *testing.T) {
	first := newFn("first", func(context.Context, agents.Request) (json.RawMessage, error) {
		return json.RawMessage(`"from A"`), nil
	})
	s := startStackWith(t, first)
	origin := s.mustSubmit(t, map[string]any{"workflow_id": "origin", "plan": plan("A:first", "B:echo:A", "C:echo:B")})
	s.mustFollow(t, origin.EventsURL)

	r := s.mustDo(t, http.MethodGet, "/v1/workflows/origin/checkpoints", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET checkpoints: status %d: %s", r.Status, r.Body)
	}
	var h history
	if err := json.Unmarshal(r.Body, &h); err != nil {
		t.Fatalf("checkpoints body %q: %v", r.Body, err)
	}
	if h.WorkflowID != "origin" || len(h.Revisions) < 3 {
		t.Fatalf("history of %q with %d revisions, want origin with several", h.WorkflowID, len(h.Revisions))
	}
	var forkAt uint64
	for i, rev := range h.Revisions {
		if i > 0 && rev.Revision <= h.Revisions[i-1].Revision {
			t.Fatalf("revision %d after %d: not oldest first", rev.Revision, h.Revisions[i-1].Revision)
		}
		want := "superseded"
		if i == len(h.Revisions)-1 {
			want = "completed"
		}
		if rev.CheckpointStatus != want {
			t.Errorf("revision %d (%d of %d) is %q, want %q", rev.Revision, i+1, len(h.Revisions), rev.CheckpointStatus, want)
		}
		if _, ok := rev.Checkpoint["outbox"]; ok {
			t.Errorf("revision %d exposes the internal \"outbox\"", rev.Revision)
		}
		if forkAt == 0 && taskStatus(rev.Checkpoint, "A") == "completed" && taskStatus(rev.Checkpoint, "C") != "completed" {
			forkAt = rev.Revision
		}
	}
	if forkAt == 0 {
		t.Fatalf("no revision has A completed and C not: %s", r.Body)
	}
	r = s.mustDo(t, http.MethodGet, "/v1/workflows/origin/checkpoints", nil, gateway.TenantHeader, "acme")
	wantError(t, "GET another tenant's checkpoints", r, http.StatusNotFound, "not_found")
	r = s.mustDo(t, http.MethodGet, "/v1/workflows/nope/checkpoints", nil)
	wantError(t, "GET an unknown workflow's checkpoints", r, http.StatusNotFound, "not_found")

	body, _ := json.Marshal(map[string]any{"revision": forkAt, "workflow_id": "forked"})
	r = s.mustDo(t, http.MethodPost, "/v1/workflows/origin/fork", body)
	if r.Status != http.StatusAccepted {
		t.Fatalf("POST fork: status %d: %s", r.Status, r.Body)
	}
	var fork submitted
	if err := json.Unmarshal(r.Body, &fork); err != nil || fork.WorkflowID != "forked" || fork.EventsURL != "/v1/workflows/forked/events" {
		t.Fatalf("fork answer %s (%v)", r.Body, err)
	}
	_, fs := s.mustFollow(t, fork.EventsURL)
	if end := fs[len(fs)-1]; end.Type != "complete" || !strings.Contains(string(end.Data), "from A") {
		t.Fatalf("fork ended with %s %s, want complete carrying A's kept output", end.Type, end.Data)
	}
	if n := first.calls.Load(); n != 1 {
		t.Fatalf("step A, completed at the fork's revision, ran %d times", n)
	}
	st := s.state(t, fork.StateURL)
	parent, _ := st["parent"].(map[string]any)
	if st["status"] != "completed" || parent["workflow_id"] != "origin" || parent["revision"] != float64(forkAt) {
		t.Fatalf("fork state status %v parent %v, want completed {origin %d}", st["status"], st["parent"], forkAt)
	}

	r = s.mustDo(t, http.MethodPost, "/v1/workflows/origin/fork", []byte(`{"revision": 999999}`))
	e := wantError(t, "fork of an unknown revision", r, http.StatusNotFound, "not_found")
	if len(e.Error.Problems) != 1 || e.Error.Problems[0].Pointer != "/revision" {
		t.Fatalf("unknown revision: problems %+v, want one at /revision", e.Error.Problems)
	}
	r = s.mustDo(t, http.MethodPost, "/v1/workflows/nope/fork", []byte(`{"revision": 1}`))
	wantError(t, "fork of an unknown workflow", r, http.StatusNotFound, "not_found")
	body, _ = json.Marshal(map[string]any{"revision": forkAt, "workflow_id": "forked"})
	r = s.mustDo(t, http.MethodPost, "/v1/workflows/origin/fork", body)
	wantError(t, "fork into an existing id", r, http.StatusConflict, "exists")

	for _, c := range []struct{ body, pointer string }{
		{`{"nope": 1, "revision": 1}`, "/nope"},
		{`{}`, "/revision"},
		{`{"revision": 0}`, "/revision"},
		{`{"revision": "1"}`, "/revision"},
		{`{"revision": 1, "workflow_id": "Not.Valid"}`, "/workflow_id"},
		{`nope`, ""},
	} {
		r := s.mustDo(t, http.MethodPost, "/v1/workflows/origin/fork", []byte(c.body))
		e := wantError(t, "fork "+c.body, r, http.StatusBadRequest, "invalid_request")
		if !hasPointer(e, c.pointer) {
			t.Errorf("fork %s: problems lack pointer %q: %s", c.body, c.pointer, r.Body)
		}
	}
}

// listing is the answer to GET /v1/workflows.
type listing struct {
	Workflows []struct {
		WorkflowID     string `json:"workflow_id"`
		Status         string `json:"status"`
		ParentWorkflow string `json:"parent_workflow"`
	} `json:"workflows"`
	Next string `json:"next"`
}

func (s *stack) list(t testing.TB, path string, header ...string) listing {
	t.Helper()
	r := s.mustDo(t, http.MethodGet, path, nil, header...)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", path, r.Status, r.Body)
	}
	var l listing
	if err := json.Unmarshal(r.Body, &l); err != nil {
		t.Fatalf("GET %s: body %q: %v", path, r.Body, err)
	}
	return l
}

func (l listing) ids() []string {
	var out []string
	for _, w := range l.Workflows {
		out = append(out, w.WorkflowID)
	}
	return out
}

func TestListWorkflowsByStatusAndPage(t *testing.T) {
	s := startStack(t)
	cycle := plan("A:echo:B", "B:echo:A")
	acme := []string{gateway.TenantHeader, "acme"}
	run := func(id string, body map[string]any, header ...string) {
		body["workflow_id"] = id
		sub := s.mustSubmit(t, body, header...)
		s.mustFollow(t, sub.EventsURL, header...)
	}
	run("ok-1", map[string]any{"query": "one"})
	run("bad-1", map[string]any{"plan": cycle})
	run("ok-2", map[string]any{"query": "two"})
	run("bad-2", map[string]any{"plan": cycle})
	run("ok-3", map[string]any{"query": "three"})
	run("acme-bad", map[string]any{"plan": cycle}, acme...)
	run("acme-ok", map[string]any{"query": "acme"}, acme...)

	failed := s.list(t, "/v1/workflows?status=failed")
	if got := failed.ids(); !slices.Equal(got, []string{"bad-1", "bad-2"}) || failed.Next != "" {
		t.Fatalf("failed workflows %v (next %q), want [bad-1 bad-2] and no next page", got, failed.Next)
	}
	for _, w := range failed.Workflows {
		if w.Status != "failed" {
			t.Errorf("workflow %s listed as failed is %s", w.WorkflowID, w.Status)
		}
	}
	if got := s.list(t, "/v1/workflows?status=failed", acme...).ids(); !slices.Equal(got, []string{"acme-bad"}) {
		t.Fatalf("acme's failed workflows %v, want [acme-bad]", got)
	}
	if got := s.list(t, "/v1/workflows?status=failed", gateway.TenantHeader, "other").ids(); len(got) != 0 {
		t.Fatalf("tenant other lists %v", got)
	}

	for _, status := range []string{"", "completed"} {
		want := []string{"bad-1", "bad-2", "ok-1", "ok-2", "ok-3"}
		if status == "completed" {
			want = []string{"ok-1", "ok-2", "ok-3"}
		}
		path := "/v1/workflows?limit=2"
		if status != "" {
			path += "&status=" + status
		}
		var got []string
		pages := 0
		for path != "" {
			if pages++; pages > len(want) {
				t.Fatalf("more than %d pages for %d workflows; at %s", len(want), len(want), path)
			}
			page := s.list(t, path)
			if len(page.Workflows) > 2 {
				t.Fatalf("GET %s: %d workflows, want at most 2", path, len(page.Workflows))
			}
			for _, w := range page.Workflows {
				if status != "" && w.Status != status {
					t.Errorf("GET %s: workflow %s is %s", path, w.WorkflowID, w.Status)
				}
			}
			got = append(got, page.ids()...)
			path = page.Next
		}
		sorted := slices.Clone(got)
		sort.Strings(sorted)
		if !slices.Equal(sorted, want) {
			t.Fatalf("status %q, pages of 2 gave %v, want every one of %v exactly once", status, got, want)
		}
		if wantPages := (len(want) + 1) / 2; pages != wantPages {
			t.Errorf("status %q: %d pages, want %d", status, pages, wantPages)
		}
	}

	for _, q := range []string{"status=bogus", "status=FAILED", "limit=0", "limit=-1", "limit=abc", "limit=1001", "limit=2.5"} {
		r := s.mustDo(t, http.MethodGet, "/v1/workflows?"+q, nil)
		wantError(t, "GET /v1/workflows?"+q, r, http.StatusBadRequest, "invalid_request")
	}
}

func TestResumeAFailedWorkflow(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	first := newFn("first", func(context.Context, agents.Request) (json.RawMessage, error) {
		return json.RawMessage(`"first done"`), nil
	})
	flaky := newFn("flaky", func(_ context.Context, req agents.Request) (json.RawMessage, error) {
		if failing.Load() {
			return nil, fmt.Errorf("%w: backend down", agents.ErrPermanent)
		}
		return json.Marshal(req.DependencyOutputs)
	})
	s := startStackWith(t, first, flaky)
	sub := s.mustSubmit(t, map[string]any{"workflow_id": "resumable", "plan": plan("A:first", "B:flaky:A", "C:echo:B")})
	_, fs := s.mustFollow(t, sub.EventsURL)
	failedAt := fs[len(fs)-1]
	if e := errorData(t, failedAt); e.StepID != "B" {
		t.Fatalf("failure %+v, want one naming step B", e)
	}
	if st := s.state(t, sub.StateURL); st["status"] != "failed" {
		t.Fatalf("state status %v, want failed", st["status"])
	}

	failing.Store(false)
	s.ctl(t, "resumable", "resume", `{}`, http.StatusOK)
	// The same stream continues after the failure.
	_, more := s.mustFollow(t, sub.EventsURL+"?from="+strconv.FormatUint(failedAt.Offset, 10))
	if end := more[len(more)-1]; end.Type != "complete" || !strings.Contains(string(end.Data), "first done") {
		t.Fatalf("resumed stream ended with %s %s, want complete carrying A's output", end.Type, end.Data)
	}
	st := s.state(t, sub.StateURL)
	if st["status"] != "completed" || st["resume_count"] != float64(1) {
		t.Fatalf("state status %v resume_count %v, want completed 1", st["status"], st["resume_count"])
	}
	if n := first.calls.Load(); n != 1 {
		t.Fatalf("completed step A ran %d times", n)
	}
	if res := s.ctl(t, "resumable", "resume", ``, http.StatusConflict); res.Status != "completed" {
		t.Fatalf("resume of a completed workflow: %+v", res)
	}
}

// TestAppliedResumeRunsTheSteps: a resume that answers 200 must run the
// failed steps again, whatever control messages came before it.
func TestAppliedResumeRunsTheSteps(t *testing.T) {
	var failing, blocking atomic.Bool
	flaky := newFn("flaky", func(ctx context.Context, _ agents.Request) (json.RawMessage, error) {
		if blocking.Load() {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		if failing.Load() {
			return nil, fmt.Errorf("%w: backend down", agents.ErrPermanent)
		}
		return json.RawMessage(`"flaky done"`), nil
	})
	s := startStackWith(t, flaky)
	// completes checks that a resumed workflow completes after failedAt.
	completes := func(t *testing.T, id string, failedAt frame, why string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), deadline/2)
		defer cancel()
		_, fs, err := s.follow(ctx, "/v1/workflows/"+id+"/events?from="+strconv.FormatUint(failedAt.Offset, 10))
		if err != nil || fs[len(fs)-1].Type != "complete" {
			st := s.state(t, "/v1/workflows/"+id)
			t.Fatalf("resume answered 200 applied, but the workflow did not complete (state %v, tasks %v; %v). %s",
				st["status"], st["tasks"], err, why)
		}
	}
	const bug = "BUG: the worker drops every step of a workflow it once saw canceled (agents/worker.go:210, " +
		"marked by agents/cancel.go:97 from KV AGENTBUS_CONTROL and agents/cancel.go:113 from any cancel message), " +
		"and nothing clears that mark when orchestrator/control.go:114 resume applies"

	t.Run("after a refused cancel", func(t *testing.T) {
		failing.Store(true)
		sub := s.mustSubmit(t, map[string]any{"workflow_id": "refused", "plan": plan("A:flaky", "B:echo:A")})
		_, fs := s.mustFollow(t, sub.EventsURL)
		failedAt := fs[len(fs)-1]
		errorData(t, failedAt)
		// A cancel of a failed workflow does not apply (409) and so must change nothing.
		if res := s.ctl(t, "refused", "cancel", `{}`, http.StatusConflict); res.Status != "failed" {
			t.Fatalf("cancel of a failed workflow: %+v", res)
		}
		failing.Store(false)
		s.ctl(t, "refused", "resume", `{}`, http.StatusOK)
		completes(t, "refused", failedAt, bug+"; here the refused cancel was recorded anyway "+
			"(orchestrator/control.go:51 records before the transition decides it does not apply).")
	})
	t.Run("after a timeout", func(t *testing.T) {
		blocking.Store(true)
		sub := s.mustSubmit(t, map[string]any{"workflow_id": "timed-out", "plan": plan("A:flaky", "B:echo:A"), "timeout_ms": 300})
		_, fs := s.mustFollow(t, sub.EventsURL)
		failedAt := fs[len(fs)-1]
		if e := errorData(t, failedAt); e.Code != events.CodeTimeout {
			t.Fatalf("error %+v, want code timeout", e)
		}
		// A timed-out workflow is failed, and failed workflows can be resumed;
		// refusing with 409 would be consistent, answering 200 and hanging is not.
		blocking.Store(false)
		r := s.mustDo(t, http.MethodPost, "/v1/workflows/timed-out/resume", []byte(`{}`))
		if r.Status == http.StatusConflict {
			return
		}
		if r.Status != http.StatusOK {
			t.Fatalf("resume of a timed-out workflow: status %d: %s", r.Status, r.Body)
		}
		completes(t, "timed-out", failedAt, bug+"; here the expiry recorded a cancel (orchestrator/deadline.go:63).")
	})
}
