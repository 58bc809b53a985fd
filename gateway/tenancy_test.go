package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/gateway"
)

// The tokens of the tenancy tests: two tenants' clients, a viewer of the
// first tenant and an admin whose own tenant has no workflows.
const (
	acmeToken   = "acme-client-0123456789abcdef"
	globexToken = "globex-client-0123456789abcdef"
	viewerToken = "acme-viewer-0123456789abcdef"
	adminToken  = "ops-admin-0123456789abcdef"
)

func withTokens(c *gateway.Config) {
	c.Auth.Tokens = []gateway.Token{
		{Token: acmeToken, Tenant: "acme", Role: gateway.RoleClient},
		{Token: globexToken, Tenant: "globex", Role: gateway.RoleClient},
		{Token: viewerToken, Tenant: "acme", Role: gateway.RoleViewer},
		{Token: adminToken, Tenant: "ops", Role: gateway.RoleAdmin},
	}
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// surface is one request on a workflow: path has {id} where the id goes.
type surface struct {
	method, path, body string
}

// wsHandshake are the headers of a WebSocket opening handshake, so that the
// ws surface is asked as a real client would ask it.
var wsHandshake = []string{"Connection", "Upgrade", "Upgrade", "websocket",
	"Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}

// headers adds the handshake headers on the ws surface.
func (s surface) headers(h []string) []string {
	if strings.HasSuffix(s.path, "/ws") {
		return append(slices.Clone(h), wsHandshake...)
	}
	return h
}

func (s surface) on(id string) (string, string, []byte) {
	var b []byte
	if s.body != "" {
		b = []byte(s.body)
	}
	return s.method, strings.ReplaceAll(s.path, "{id}", id), b
}

// workflowSurfaces is every route that names a workflow.
var workflowSurfaces = []surface{
	{http.MethodGet, "/v1/workflows/{id}", ""},
	{http.MethodGet, "/v1/workflows/{id}/events", ""},
	{http.MethodGet, "/v1/workflows/{id}/events?from=1", ""},
	{http.MethodGet, "/v1/workflows/{id}/ws", ""},
	{http.MethodGet, "/v1/workflows/{id}/checkpoints", ""},
	{http.MethodPost, "/v1/workflows/{id}/cancel", `{"reason": "not yours"}`},
	{http.MethodPost, "/v1/workflows/{id}/resume", `{}`},
	{http.MethodPost, "/v1/workflows/{id}/approve", `{"approve": false}`},
	{http.MethodPost, "/v1/workflows/{id}/fork", `{"revision": 1}`},
}

// startTenancy starts an auth-on stack with one finished workflow per
// tenant: acme's "acme-wf" and globex's "globex-wf".
func startTenancy(t *testing.T, tweak ...func(*gateway.Config)) *stack {
	t.Helper()
	s := startStack(t, append([]func(*gateway.Config){withTokens}, tweak...)...)
	for _, w := range []struct{ id, token, query string }{
		{"acme-wf", acmeToken, "acme secret plans"},
		{"globex-wf", globexToken, "globex secret plans"},
	} {
		sub := s.mustSubmit(t, map[string]any{"workflow_id": w.id, "query": w.query}, bearer(w.token)...)
		if sub.TenantID != strings.TrimSuffix(w.id, "-wf") {
			t.Fatalf("submit %s: tenant %q", w.id, sub.TenantID)
		}
		s.mustFollow(t, sub.EventsURL, bearer(w.token)...)
	}
	return s
}

// TestTenantIsolationMatrix: on every surface, another tenant's workflow is
// a 404 byte-identical (but for the id) to the one for an id that never
// existed, so the answer tells nothing, not even that it exists.
func TestTenantIsolationMatrix(t *testing.T) {
	s := startTenancy(t)
	strangers := map[string][]string{
		"globex client":         bearer(globexToken),
		"admin of its own":      bearer(adminToken),
		"admin naming globex":   append(bearer(adminToken), gateway.TenantHeader, "globex"),
		"globex with acme hdr":  append(bearer(globexToken), gateway.TenantHeader, "acme"),
		"acme cookie on globex": {"Cookie", gateway.TokenCookie + "=" + acmeToken},
	}
	for who, h := range strangers {
		victim := "acme-wf"
		if strings.Contains(who, "on globex") {
			victim = "globex-wf"
		}
		for _, sf := range workflowSurfaces {
			t.Run(who+"/"+sf.method+" "+sf.path, func(t *testing.T) {
				m, p, b := sf.on(victim)
				got := s.mustDo(t, m, p, b, sf.headers(h)...)
				m, p, b = sf.on("never-was")
				want := s.mustDo(t, m, p, b, sf.headers(h)...)
				if got.Status != http.StatusNotFound || want.Status != http.StatusNotFound {
					t.Fatalf("%s %s: status %d (unknown id: %d), want 404: %s", m, p, got.Status, want.Status, got.Body)
				}
				if !bytes.Equal(bytes.ReplaceAll(got.Body, []byte(victim), []byte("never-was")), want.Body) {
					t.Errorf("another tenant's workflow answers\n%s\nbut an unknown id\n%s", got.Body, want.Body)
				}
				for _, leak := range []string{"secret plans", "acme\"", "globex\"", "tenant"} {
					if bytes.Contains(got.Body, []byte(leak)) {
						t.Errorf("404 body mentions %q: %s", leak, got.Body)
					}
				}
			})
		}
	}

	t.Run("list shows only the token's tenant", func(t *testing.T) {
		for token, want := range map[string]string{globexToken: "globex-wf", acmeToken: "acme-wf", viewerToken: "acme-wf"} {
			r := s.mustDo(t, http.MethodGet, "/v1/workflows", nil, append(bearer(token), gateway.TenantHeader, "ops")...)
			var l struct {
				Workflows []struct {
					WorkflowID string `json:"workflow_id"`
				} `json:"workflows"`
			}
			if err := json.Unmarshal(r.Body, &l); err != nil || r.Status != http.StatusOK {
				t.Fatalf("list: %d %s (%v)", r.Status, r.Body, err)
			}
			if len(l.Workflows) != 1 || l.Workflows[0].WorkflowID != want {
				t.Errorf("list for %s… = %s, want only %s", token[:6], r.Body, want)
			}
		}
		if r := s.mustDo(t, http.MethodGet, "/v1/workflows", nil, bearer(adminToken)...); !bytes.Contains(r.Body, []byte(`"workflows": []`)) {
			t.Errorf("admin's own tenant lists %s", r.Body)
		}
	})

	t.Run("the tenant comes from the token, never from the body", func(t *testing.T) {
		r := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query": "x", "tenant_id": "acme"}`), bearer(globexToken)...)
		if e := wantError(t, "tenant in body", r, http.StatusBadRequest, "invalid_request"); len(e.Error.Problems) != 1 || e.Error.Problems[0].Pointer != "/tenant_id" {
			t.Errorf("problems %+v, want /tenant_id", e.Error.Problems)
		}
		// Reusing another tenant's id makes a workflow of one's own: no
		// 409 that would tell the id is taken.
		sub := s.mustSubmit(t, map[string]any{"workflow_id": "acme-wf", "query": "globex's own"}, bearer(globexToken)...)
		if sub.TenantID != "globex" {
			t.Fatalf("submit as globex answered tenant %q", sub.TenantID)
		}
		s.mustFollow(t, sub.EventsURL, bearer(globexToken)...)
		mine := s.state(t, "/v1/workflows/acme-wf", bearer(acmeToken)...)
		theirs := s.state(t, "/v1/workflows/acme-wf", bearer(globexToken)...)
		if mine["tenant_id"] != "acme" || theirs["tenant_id"] != "globex" || !strings.Contains(mustJSON(t, mine), "acme secret plans") ||
			strings.Contains(mustJSON(t, theirs), "acme secret") {
			t.Fatalf("same id in two tenants mixed up:\nacme: %v\nglobex: %v", mine, theirs)
		}
	})
}

// TestAuthRejections: no, a malformed or an unknown token is 401 with a
// Bearer challenge on every surface; open routes need none.
func TestAuthRejections(t *testing.T) {
	s := startStack(t, withTokens)
	creds := map[string]struct {
		header    []string
		challenge string
		in        string // the header the problem names: where the credential came, or should have
	}{
		"none":        {nil, `Bearer realm="agentbus"`, "Authorization"},
		"unknown":     {bearer("not-a-real-token-000000000"), `error="invalid_token"`, "Authorization"},
		"basic":       {[]string{"Authorization", "Basic YWxpY2U6c2VjcmV0"}, `error="invalid_request"`, "Authorization"},
		"empty":       {[]string{"Authorization", "Bearer "}, `error="invalid_request"`, "Authorization"},
		"tenant only": {[]string{gateway.TenantHeader, "acme"}, `Bearer realm="agentbus"`, "Authorization"},
		"bad cookie":  {[]string{"Cookie", gateway.TokenCookie + "=nope-nope-nope-nope-nope"}, `error="invalid_token"`, "Cookie"},
	}
	all := append([]surface{
		{http.MethodPost, "/v1/workflows", `{"query": "x"}`},
		{http.MethodGet, "/v1/workflows", ""},
		{http.MethodGet, "/v1/agents", ""},
		{http.MethodGet, "/v1/capabilities", ""},
	}, workflowSurfaces...)
	for name, c := range creds {
		for _, sf := range all {
			m, p, b := sf.on("acme-wf")
			r := s.mustDo(t, m, p, b, sf.headers(c.header)...)
			e := wantError(t, name+" "+m+" "+p, r, http.StatusUnauthorized, "unauthorized")
			if len(e.Error.Problems) != 1 || e.Error.Problems[0].In != gateway.InHeader || e.Error.Problems[0].Name != c.in {
				t.Errorf("%s %s %s: problems %+v, want one naming header %s", name, m, p, e.Error.Problems, c.in)
			}
			if strings.Contains(string(r.Body), "YWxpY2U6c2VjcmV0") || strings.Contains(string(r.Body), "nope-nope") {
				t.Errorf("%s %s %s: the answer echoes the credential: %s", name, m, p, r.Body)
			}
			if ch := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "Bearer ") || !strings.Contains(ch, c.challenge) {
				t.Errorf("%s %s %s: WWW-Authenticate %q, want %q", name, m, p, ch, c.challenge)
			}
		}
	}
	// No route is 404 (405 for another method) before any token is
	// asked for: the route table is public, and a client that got the path
	// wrong learns that rather than to fetch a token.
	for name, c := range creds {
		wantError(t, name+" GET /v1/nowhere", s.mustDo(t, http.MethodGet, "/v1/nowhere", nil, c.header...), http.StatusNotFound, "not_found")
		wantError(t, name+" DELETE /v1/workflows", s.mustDo(t, http.MethodDelete, "/v1/workflows", nil, c.header...), http.StatusMethodNotAllowed, "method_not_allowed")
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if r := s.mustDo(t, http.MethodGet, p, nil); r.Status != http.StatusOK {
			t.Errorf("GET %s without a token: %d, want 200 (open)", p, r.Status)
		}
	}
}

// TestRolesAndCarriers: a viewer reads but never writes; an admin picks the
// tenant; a client's X-Agentbus-Tenant is ignored; the cookie works like the
// header, except cross-site (any method).
func TestRolesAndCarriers(t *testing.T) {
	s := startTenancy(t)
	t.Run("viewer reads", func(t *testing.T) {
		s.state(t, "/v1/workflows/acme-wf", bearer(viewerToken)...)
		s.mustFollow(t, "/v1/workflows/acme-wf/events", bearer(viewerToken)...)
		if r := s.mustDo(t, http.MethodGet, "/v1/workflows/acme-wf/checkpoints", nil, bearer(viewerToken)...); r.Status != http.StatusOK {
			t.Fatalf("viewer checkpoints: %d %s", r.Status, r.Body)
		}
	})
	t.Run("viewer never writes", func(t *testing.T) {
		writes := append([]surface{{http.MethodPost, "/v1/workflows", `{"query": "x"}`}}, workflowSurfaces...)
		for _, sf := range writes {
			if sf.method == http.MethodGet {
				continue
			}
			m, p, b := sf.on("acme-wf")
			r := s.mustDo(t, m, p, b, bearer(viewerToken)...)
			wantError(t, "viewer "+m+" "+p, r, http.StatusForbidden, "forbidden")
		}
	})
	t.Run("viewer reads over A2A but never writes", func(t *testing.T) {
		get := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"acme-wf"}}`
		if r := s.mustDo(t, http.MethodPost, "/a2a", []byte(get), bearer(viewerToken)...); r.Status != http.StatusOK ||
			!strings.Contains(string(r.Body), `"result"`) {
			t.Fatalf("viewer tasks/get: %d %s", r.Status, r.Body)
		}
		for _, m := range []string{"message/send", "message/stream", "tasks/cancel"} {
			body := `{"jsonrpc":"2.0","id":2,"method":"` + m + `","params":{"id":"acme-wf","message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`
			r := s.mustDo(t, http.MethodPost, "/a2a", []byte(body), bearer(viewerToken)...)
			if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "read-only") {
				t.Fatalf("viewer %s: %d %s, want 403 read-only", m, r.Status, r.Body)
			}
		}
	})
	t.Run("client header ignored", func(t *testing.T) {
		h := append(bearer(acmeToken), gateway.TenantHeader, "globex")
		if st := s.state(t, "/v1/workflows/acme-wf", h...); st["tenant_id"] != "acme" {
			t.Fatalf("state %v", st)
		}
		sub := s.mustSubmit(t, map[string]any{"query": "where am I"}, h...)
		if sub.TenantID != "acme" {
			t.Fatalf("client naming globex submitted to %q", sub.TenantID)
		}
	})
	t.Run("admin picks the tenant", func(t *testing.T) {
		for _, tenant := range []string{"acme", "globex"} {
			h := append(bearer(adminToken), gateway.TenantHeader, tenant)
			if st := s.state(t, "/v1/workflows/"+tenant+"-wf", h...); st["tenant_id"] != tenant {
				t.Fatalf("admin as %s: state %v", tenant, st)
			}
		}
		sub := s.mustSubmit(t, map[string]any{"query": "ops work"}, bearer(adminToken)...)
		if sub.TenantID != "ops" {
			t.Fatalf("admin without a header submitted to %q, want its own tenant ops", sub.TenantID)
		}
		r := s.mustDo(t, http.MethodGet, "/v1/workflows/acme-wf", nil, append(bearer(adminToken), gateway.TenantHeader, "Not A Tenant")...)
		wantError(t, "admin with a bad header", r, http.StatusBadRequest, "invalid_tenant")
	})
	t.Run("cookie", func(t *testing.T) {
		cookie := []string{"Cookie", gateway.TokenCookie + "=" + acmeToken}
		s.state(t, "/v1/workflows/acme-wf", cookie...)
		s.mustFollow(t, "/v1/workflows/acme-wf/events", cookie...)
		s.mustSubmit(t, map[string]any{"query": "same site"}, append(cookie, "Sec-Fetch-Site", "same-origin")...)
		r := s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query": "csrf"}`), append(cookie, "Sec-Fetch-Site", "cross-site")...)
		wantError(t, "cross-site POST with the cookie", r, http.StatusForbidden, "forbidden")
		// The same request with the header cannot be forged by a page, but a
		// cross-site write is refused whatever its credentials unless its
		// origin is allowed (--cors-origins; TestCrossSiteWrites), and a
		// cross-site read with the cookie is refused too.
		r = s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query": "api from elsewhere"}`), append(bearer(acmeToken), "Sec-Fetch-Site", "cross-site")...)
		wantError(t, "cross-site POST with a bearer token, origin not allowed", r, http.StatusForbidden, "forbidden")
		r = s.mustDo(t, http.MethodGet, "/v1/workflows/acme-wf", nil, append(cookie, "Sec-Fetch-Site", "cross-site")...)
		wantError(t, "cross-site GET with the cookie", r, http.StatusForbidden, "forbidden")
		s.state(t, "/v1/workflows/acme-wf", append(bearer(acmeToken), "Sec-Fetch-Site", "cross-site")...)
	})
}

// TestAuthOffUsesTheTenantHeader: without tokens, credentials are ignored
// and X-Agentbus-Tenant picks the tenant, as before auth existed.
func TestAuthOffUsesTheTenantHeader(t *testing.T) {
	s := startStack(t)
	acme := []string{gateway.TenantHeader, "acme", "Authorization", "Bearer whatever-whatever-whatever"}
	sub := s.mustSubmit(t, map[string]any{"workflow_id": "off-1", "query": "hi"}, acme...)
	if sub.TenantID != "acme" {
		t.Fatalf("tenant %q, want acme", sub.TenantID)
	}
	s.mustFollow(t, sub.EventsURL, acme...)
	wantError(t, "default tenant", s.mustDo(t, http.MethodGet, sub.StateURL, nil), http.StatusNotFound, "not_found")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if r, err := s.do(ctx, http.MethodGet, "/v1/workflows", nil, gateway.TenantHeader, "acme"); err != nil || !bytes.Contains(r.Body, []byte("off-1")) {
		t.Fatalf("list as acme: %v %s", err, r.Body)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
