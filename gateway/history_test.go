package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
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
		if !slices.ContainsFunc(e.Error.Problems, func(p struct {
			Pointer string `json:"pointer"`
			Message string `json:"message"`
		}) bool {
			return p.Pointer == c.pointer
		}) {
			t.Errorf("fork %s: problems lack pointer %q: %s", c.body, c.pointer, r.Body)
		}
	}
}

// listing is the answer to GET /v1/workflows.
type listing struct {
	Workflows []struct {
		WorkflowID string `json:"workflow_id"`
		Status     string `json:"status"`
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
		if !slices.Equal(sorted, want) || len(slices.Compact(sorted)) != len(got) {
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
