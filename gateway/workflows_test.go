package gateway_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/gateway"
)

func TestSubmitQueryAcceptsAndCompletes(t *testing.T) {
	s := startStack(t)
	sub := s.mustSubmit(t, map[string]any{"query": "hello gateway"})
	id := sub.WorkflowID
	if id == "" || sub.TenantID != gateway.DefaultTenant || sub.Status != "accepted" {
		t.Fatalf("submit answer %+v: want a workflow id, tenant %q, status accepted", sub, gateway.DefaultTenant)
	}
	if sub.StateURL != "/v1/workflows/"+id || sub.EventsURL != "/v1/workflows/"+id+"/events" {
		t.Errorf("urls %q, %q do not name workflow %s", sub.StateURL, sub.EventsURL, id)
	}
	if want := "agentbus.default.events." + id; sub.EventsSubject != want {
		t.Errorf("events_subject %q, want %q", sub.EventsSubject, want)
	}

	_, fs := s.mustFollow(t, sub.EventsURL)
	if end := fs[len(fs)-1]; end.Type != "complete" || !strings.Contains(string(end.Data), "hello gateway") {
		t.Fatalf("last frame %s %s, want complete carrying the query", end.Type, end.Data)
	}
	st := s.state(t, sub.StateURL)
	if st["status"] != "completed" || st["workflow_id"] != id || st["tenant_id"] != gateway.DefaultTenant {
		t.Fatalf("state status %v workflow %v tenant %v, want completed %s default", st["status"], st["workflow_id"], st["tenant_id"], id)
	}
	if _, ok := st["outbox"]; ok {
		t.Error(`state exposes the internal "outbox"`)
	}
}

func TestSubmitUnderATenantHeader(t *testing.T) {
	s := startStack(t)
	acme := []string{gateway.TenantHeader, "acme"}
	sub := s.mustSubmit(t, map[string]any{"workflow_id": "acme-1", "query": "hi"}, acme...)
	if sub.WorkflowID != "acme-1" || sub.TenantID != "acme" || sub.EventsSubject != "agentbus.acme.events.acme-1" {
		t.Fatalf("submit answer %+v", sub)
	}
	_, fs := s.mustFollow(t, sub.EventsURL, acme...)
	for _, f := range fs {
		if f.TenantID != "acme" {
			t.Fatalf("frame %d of tenant %q", f.Offset, f.TenantID)
		}
	}
	if st := s.state(t, sub.StateURL, acme...); st["status"] != "completed" {
		t.Fatalf("state status %v", st["status"])
	}
	// Another tenant does not see it, neither its state nor its events.
	for _, path := range []string{sub.StateURL, sub.EventsURL} {
		for _, h := range [][]string{nil, {gateway.TenantHeader, "default"}, {gateway.TenantHeader, "other"}} {
			r := s.mustDo(t, http.MethodGet, path, nil, h...)
			wantError(t, "GET "+path+" as "+strings.Join(h, "="), r, http.StatusNotFound, "not_found")
		}
	}
}

func TestSubmitRejectsBadBodies(t *testing.T) {
	s := startStack(t)
	cases := []struct {
		name     string
		body     string
		pointers []string // every one must be among the problems
		says     string   // and some problem's message contains this
	}{
		{"not json", `{"query": nope}`, []string{""}, "not valid JSON"},
		{"empty body", ``, []string{""}, "not valid JSON"},
		{"array", `[]`, []string{""}, "want object"},
		{"empty object", `{}`, []string{"/query", "/plan"}, "required"},
		{"empty query", `{"query": ""}`, []string{"/query"}, ""},
		{"unknown field", `{"query": "x", "extra": 1}`, []string{"/extra"}, `"extra"`},
		{"unknown step field", `{"plan": {"steps": [{"id": "A", "capability": "echo", "needs": []}]}}`, []string{"/plan/steps/0/needs"}, `"needs"`},
		{"bad workflow id", `{"workflow_id": "No.Dots", "query": "x"}`, []string{"/workflow_id"}, ""},
		{"bad step id", `{"plan": {"steps": [{"id": "a.b", "capability": "echo"}]}}`, []string{"/plan/steps/0/id"}, "'a.b'"},
		{"non-string depends_on", `{"plan": {"steps": [{"id": "A", "capability": "echo"}, {"id": "B", "capability": "echo", "depends_on": [1]}]}}`,
			[]string{"/plan/steps/1/depends_on/0"}, "want string"},
		{"upper-case capability", `{"plan": {"steps": [{"id": "A", "capability": "Echo"}]}}`, []string{"/plan/steps/0/capability"}, "'Echo'"},
		{"no steps", `{"plan": {"steps": []}}`, []string{"/plan/steps"}, ""},
		{"missing capability", `{"plan": {"steps": [{"id": "A"}]}}`, []string{"/plan/steps/0/capability"}, "required"},
		{"several problems", `{"plan": {"steps": [{"id": "a.b", "capability": "Echo"}, {"id": "B", "capability": "echo", "depends_on": [1]}]}}`,
			[]string{"/plan/steps/0/capability", "/plan/steps/0/id", "/plan/steps/1/depends_on/0"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(c.body))
			e := wantError(t, "POST", r, http.StatusBadRequest, "invalid_request")
			var got []string
			said := c.says == ""
			for _, p := range e.Error.Problems {
				got = append(got, p.Pointer)
				if p.Message == "" {
					t.Errorf("problem at %q has no message", p.Pointer)
				}
				said = said || strings.Contains(p.Message, c.says)
			}
			for _, want := range c.pointers {
				if !slices.Contains(got, want) {
					t.Errorf("problems at %q lack pointer %q: %s", got, want, r.Body)
				}
			}
			if !said {
				t.Errorf("no problem says %q: %s", c.says, r.Body)
			}
		})
	}
}

func TestSubmitRejectsOversizeBodies(t *testing.T) {
	s := startStack(t)
	body := append([]byte(`{"query": "`), bytes.Repeat([]byte("a"), 1<<20)...)
	body = append(body, `"}`...)
	r := s.mustDo(t, http.MethodPost, "/v1/workflows", body)
	wantError(t, "POST 1 MiB", r, http.StatusRequestEntityTooLarge, "too_large")

	// Just under the limit is read, and then judged by the schema
	// (a query is at most 64 KiB).
	body = append([]byte(`{"query": "`), bytes.Repeat([]byte("a"), 1<<20-20)...)
	body = append(body, `"}`...)
	r = s.mustDo(t, http.MethodPost, "/v1/workflows", body)
	wantError(t, "POST under 1 MiB", r, http.StatusBadRequest, "invalid_request")
}

func TestBadTenantHeaderIsRejected(t *testing.T) {
	s := startStack(t)
	for _, tenant := range []string{"a.b", "Acme", "*", "a b", ">"} {
		bad := []string{gateway.TenantHeader, tenant}
		for _, req := range []struct{ method, path, body string }{
			{http.MethodPost, "/v1/workflows", `{"query": "x"}`},
			{http.MethodGet, "/v1/workflows/some-id", ""},
			{http.MethodGet, "/v1/workflows/some-id/events", ""},
		} {
			var body []byte
			if req.body != "" {
				body = []byte(req.body)
			}
			r := s.mustDo(t, req.method, req.path, body, bad...)
			wantError(t, req.method+" "+req.path+" tenant "+tenant, r, http.StatusBadRequest, "invalid_tenant")
		}
	}
}

func TestReusedWorkflowIDConflicts(t *testing.T) {
	s := startStack(t)
	first := s.mustSubmit(t, map[string]any{"workflow_id": "dup", "query": "first"})
	if first.Status != "accepted" {
		t.Fatalf("first submit status %q", first.Status)
	}
	r := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"workflow_id": "dup", "query": "second"}`))
	wantError(t, "second POST", r, http.StatusConflict, "exists")
	// The same id under another tenant is another workflow.
	other := s.mustSubmit(t, map[string]any{"workflow_id": "dup", "query": "third"}, gateway.TenantHeader, "acme")
	if other.TenantID != "acme" || other.Status != "accepted" {
		t.Fatalf("acme submit %+v", other)
	}
	_, fs := s.mustFollow(t, first.EventsURL)
	if end := fs[len(fs)-1]; !strings.Contains(string(end.Data), "first") || strings.Contains(string(end.Data), "second") {
		t.Fatalf("workflow dup ended with %s %s, want the first submission's query only", end.Type, end.Data)
	}
}

func TestUnknownWorkflowIsNotFound(t *testing.T) {
	s := startStack(t)
	for _, path := range []string{
		"/v1/workflows/nope", "/v1/workflows/nope/events", "/v1/workflows/nope/events?from=3",
		"/v1/workflows/Not.A.Token", "/v1/workflows/Not.A.Token/events",
	} {
		r := s.mustDo(t, http.MethodGet, path, nil)
		wantError(t, "GET "+path, r, http.StatusNotFound, "not_found")
	}
}

func TestHealthz(t *testing.T) {
	s := startStack(t)
	r := s.mustDo(t, http.MethodGet, "/healthz", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	m, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || m["status"] != "ok" {
		t.Fatalf("body %s, want {\"status\":\"ok\"}", r.Body)
	}
}

// wantError checks an error answer's status, JSON shape and code.
func wantError(t *testing.T, what string, r reply, status int, code string) apiErr {
	t.Helper()
	var e apiErr
	if r.Status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
	if err := json.Unmarshal(r.Body, &e); err != nil {
		t.Fatalf("%s: body %q: %v", what, r.Body, err)
	}
	if e.Error.Code != code || e.Error.Message == "" {
		t.Fatalf("%s: error code %q message %q, want code %q and a message: %s", what, e.Error.Code, e.Error.Message, code, r.Body)
	}
	return e
}
