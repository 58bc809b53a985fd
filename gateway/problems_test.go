package gateway_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/gateway"
)

// routes is every route of the gateway: method and path ({id} is a
// workflow that exists).
var routes = []surface{
	{http.MethodGet, "/healthz", ""},
	{http.MethodGet, "/readyz", ""},
	{http.MethodGet, "/metrics", ""},
	{http.MethodGet, "/.well-known/agent-card.json", ""},
	{http.MethodGet, "/v1/agents", ""},
	{http.MethodGet, "/v1/capabilities", ""},
	{http.MethodGet, "/v1/workflows", ""},
	{http.MethodGet, "/v1/workflows/events", ""},
	{http.MethodGet, "/v1/ws", ""},
	{http.MethodPost, "/v1/workflows", `{"query": "x"}`},
	{http.MethodGet, "/v1/workflows/{id}", ""},
	{http.MethodGet, "/v1/workflows/{id}/events", ""},
	{http.MethodGet, "/v1/workflows/{id}/ws", ""},
	{http.MethodGet, "/v1/workflows/{id}/checkpoints", ""},
	{http.MethodPost, "/v1/workflows/{id}/fork", `{"revision": 1}`},
	{http.MethodPost, "/v1/workflows/{id}/cancel", `{}`},
	{http.MethodPost, "/v1/workflows/{id}/resume", `{}`},
	{http.MethodPost, "/v1/workflows/{id}/approve", `{}`},
	{http.MethodPost, "/a2a", `{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}}`},
	{http.MethodPost, "/tasks/send", `{"message": {"parts": [{"text": "x"}]}}`},
}

// TestErrorShape walks every query parameter, header and route: each bad
// one is answered in the one JSON error shape, with the problem naming
// where it is (in + name, or in + pointer for a body) and quoting the
// offending value.
func TestErrorShape(t *testing.T) {
	s := startStack(t)
	sub := s.mustSubmit(t, map[string]any{"workflow_id": "known", "query": "hi"})
	s.mustFollow(t, sub.EventsURL)

	type problem struct{ in, name, value string } // value: a fragment of the message
	long := strings.Repeat("e", 300)
	cases := []struct {
		name         string
		method, path string
		body         string
		header       []string
		status       int
		code         string
		want         *problem // nil: no problem, only code and message
	}{
		// Query parameters.
		{"events from", "GET", "/v1/workflows/known/events?from=abc", "", nil, 400, "invalid_request", &problem{"query", "from", `"abc"`}},
		{"events from negative", "GET", "/v1/workflows/known/events?from=-1", "", nil, 400, "invalid_request", &problem{"query", "from", `"-1"`}},
		{"events Last-Event-ID", "GET", "/v1/workflows/known/events", "", []string{"Last-Event-ID", "x7"}, 400, "invalid_request", &problem{"header", "Last-Event-ID", `"x7"`}},
		{"events Last-Event-ID over from", "GET", "/v1/workflows/known/events?from=0", "", []string{"Last-Event-ID", "x7"}, 400, "invalid_request", &problem{"header", "Last-Event-ID", `"x7"`}},
		{"events epoch", "GET", "/v1/workflows/known/events?epoch=" + long, "", nil, 400, "invalid_request", &problem{"query", "epoch", `"eeee`}},
		{"ws from", "GET", "/v1/workflows/known/ws?from=1.5", "", nil, 400, "invalid_request", &problem{"query", "from", `"1.5"`}},
		{"ws Last-Event-ID", "GET", "/v1/workflows/known/ws", "", []string{"Last-Event-ID", "-3"}, 400, "invalid_request", &problem{"header", "Last-Event-ID", `"-3"`}},
		{"ws epoch", "GET", "/v1/workflows/known/ws?epoch=" + long, "", nil, 400, "invalid_request", &problem{"query", "epoch", "300 bytes"}},
		{"list status", "GET", "/v1/workflows?status=done", "", nil, 400, "invalid_request", &problem{"query", "status", `"done"`}},
		{"list limit", "GET", "/v1/workflows?limit=0", "", nil, 400, "invalid_request", &problem{"query", "limit", `"0"`}},
		{"list limit text", "GET", "/v1/workflows?limit=ten", "", nil, 400, "invalid_request", &problem{"query", "limit", `"ten"`}},
		{"list after", "GET", "/v1/workflows?after=Not.An.Id", "", nil, 400, "invalid_request", &problem{"query", "after", `"Not.An.Id"`}},
		{"list after blank", "GET", "/v1/workflows?after=%20", "", nil, 400, "invalid_request", &problem{"query", "after", `" "`}},
		{"agents k", "GET", "/v1/agents?query=echo&k=0", "", nil, 400, "invalid_request", &problem{"query", "k", `"0"`}},
		{"agents k text", "GET", "/v1/agents?query=echo&k=many", "", nil, 400, "invalid_request", &problem{"query", "k", `"many"`}},
		{"agents k without query", "GET", "/v1/agents?k=3", "", nil, 400, "invalid_request", &problem{"query", "k", `"3"`}},
		{"agents blank query", "GET", "/v1/agents?query=%20", "", nil, 400, "invalid_request", &problem{"query", "query", `" "`}},
		{"agents long query", "GET", "/v1/agents?query=" + strings.Repeat("q", 5000), "", nil, 400, "invalid_request", &problem{"query", "query", "5000 bytes"}},
		{"capabilities all_tenants", "GET", "/v1/capabilities?all_tenants=maybe", "", nil, 400, "invalid_request", &problem{"query", "all_tenants", `"maybe"`}},
		// Headers.
		{"tenant on GET", "GET", "/v1/workflows", "", []string{gateway.TenantHeader, "Bad.Tenant"}, 400, "invalid_tenant", &problem{"header", gateway.TenantHeader, `"Bad.Tenant"`}},
		{"tenant on POST", "POST", "/v1/workflows", `{"query": "x"}`, []string{gateway.TenantHeader, "a b"}, 400, "invalid_tenant", &problem{"header", gateway.TenantHeader, `"a b"`}},
		{"tenant on events", "GET", "/v1/workflows/known/events", "", []string{gateway.TenantHeader, "*"}, 400, "invalid_tenant", &problem{"header", gateway.TenantHeader, `"*"`}},
		{"content type", "POST", "/v1/workflows", `{"query": "x"}`, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type", &problem{"header", "Content-Type", `"text/plain"`}},
		{"content type charset", "POST", "/v1/workflows", `{"query": "x"}`, []string{"Content-Type", "application/json; charset=latin1"}, 415, "unsupported_media_type", &problem{"header", "Content-Type", "latin1"}},
		{"content type form", "POST", "/v1/workflows/known/cancel", `a=b`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", &problem{"header", "Content-Type", "form-urlencoded"}},
		{"ws foreign origin", "GET", "/v1/workflows/known/ws", "", append(slices.Clone(wsHandshake), "Origin", "https://evil.example"), 403, "forbidden", &problem{"header", "Origin", "evil.example"}},
		{"ws not an upgrade", "GET", "/v1/workflows/known/ws", "", nil, 426, "upgrade_required", &problem{"header", "Upgrade", "Upgrade"}},
		// Path and body.
		{"path id", "GET", "/v1/workflows/Not.An.Id", "", nil, 404, "not_found", &problem{"path", "id", `"Not.An.Id"`}},
		// An unknown workflow is 404 at once on every surface, streams
		// included (agentbus watch relies on it): a stream that opened
		// instead would hold this request until the test's deadline.
		{"state unknown id", "GET", "/v1/workflows/nope", "", nil, 404, "not_found", &problem{"path", "id", `"nope"`}},
		{"events unknown id", "GET", "/v1/workflows/nope/events", "", nil, 404, "not_found", &problem{"path", "id", `"nope"`}},
		{"events unknown id, Last-Event-ID", "GET", "/v1/workflows/nope/events?from=0", "", []string{"Last-Event-ID", "7"}, 404, "not_found", &problem{"path", "id", `"nope"`}},
		{"ws unknown id", "GET", "/v1/workflows/nope/ws", "", nil, 404, "not_found", &problem{"path", "id", `"nope"`}},
		{"checkpoints unknown id", "GET", "/v1/workflows/nope/checkpoints", "", nil, 404, "not_found", &problem{"path", "id", `"nope"`}},
		{"cancel unknown id", "POST", "/v1/workflows/nope/cancel", `{}`, nil, 404, "not_found", &problem{"path", "id", `"nope"`}},
		{"delete unknown id", "DELETE", "/v1/workflows/nope", "", nil, 404, "not_found", &problem{"path", "id", `"nope"`}},
		{"body too large", "POST", "/v1/workflows", `{"query": "` + strings.Repeat("q", 1<<20) + `"}`, nil, 413, "too_large", &problem{"body", "", "exceeds"}},
		{"body schema", "POST", "/v1/workflows", `{"plan": {"steps": [{"id": "A", "capability": "Echo"}]}}`, nil, 400, "invalid_request", &problem{"body", "/plan/steps/0/capability", "Echo"}},
		{"body not JSON", "POST", "/v1/workflows/known/cancel", `{nope`, nil, 400, "invalid_request", &problem{"body", "", "JSON"}},
		{"body fork revision", "POST", "/v1/workflows/known/fork", `{"revision": 999}`, nil, 404, "not_found", &problem{"body", "/revision", "999"}},
		{"body tasks/send", "POST", "/tasks/send", `{"message": {}}`, nil, 400, "invalid_request", &problem{"body", "/message/parts", "required"}},
		// Routes.
		{"unknown route", "GET", "/v1/nowhere", "", nil, 404, "not_found", nil},
		{"outside the dashboard", "GET", "/nowhere", "", nil, 404, "not_found", nil},
		{"unknown sub-route", "GET", "/v1/workflows/known/nothing", "", nil, 404, "not_found", nil},
		{"wrong method", "PUT", "/v1/workflows/known", "", nil, 405, "method_not_allowed", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body []byte
			if c.body != "" {
				body = []byte(c.body)
			}
			r := s.mustDo(t, c.method, c.path, body, c.header...)
			e := wantError(t, c.method+" "+c.path, r, c.status, c.code)
			if c.want == nil {
				return
			}
			for _, p := range e.Error.Problems {
				where := p.Name
				if p.In == gateway.InBody {
					where = p.Pointer
				}
				if p.In == c.want.in && where == c.want.name && strings.Contains(p.Message, c.want.value) {
					return
				}
			}
			t.Fatalf("no problem in %s %q saying %q: %s", c.want.in, c.want.name, c.want.value, r.Body)
		})
	}

	// Every route: another method is 405 naming the allowed ones; a
	// write's non-JSON body is 415.
	for _, rt := range routes {
		m, p, b := rt.on("known")
		t.Run("PUT "+rt.path, func(t *testing.T) {
			r := s.mustDo(t, http.MethodPut, p, b)
			wantError(t, "PUT "+p, r, http.StatusMethodNotAllowed, "method_not_allowed")
			if allow := r.Header.Get("Allow"); !strings.Contains(allow, m) {
				t.Errorf("PUT %s: Allow %q lacks %s", p, allow, m)
			}
		})
		if m != http.MethodPost {
			continue
		}
		t.Run("text/plain "+rt.path, func(t *testing.T) {
			r := s.mustDo(t, m, p, b, "Content-Type", "text/plain")
			e := wantError(t, "POST "+p+" as text/plain", r, http.StatusUnsupportedMediaType, "unsupported_media_type")
			if len(e.Error.Problems) != 1 || e.Error.Problems[0].In != gateway.InHeader || e.Error.Problems[0].Name != "Content-Type" {
				t.Errorf("problems %+v, want one naming header Content-Type", e.Error.Problems)
			}
		})
	}
}
