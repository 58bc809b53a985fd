package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/gateway/dashboard"
)

// The dashboard is served at / and its page routes, open even with auth on
// (the page holds no data: it calls the API with the token cookie), while
// unknown /v1 paths stay JSON 404s.
func TestDashboardRoutes(t *testing.T) {
	const client = "dash-client-0123456789abcdef"
	s := startStack(t, func(c *gateway.Config) {
		c.Auth.Tokens = []gateway.Token{{Token: client, Tenant: "acme", Role: gateway.RoleClient}}
	})
	for _, p := range []string{"/", "/workflows", "/workflows/some-id", "/agents", "/submit", "/login"} {
		r := s.mustDo(t, http.MethodGet, p, nil)
		if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s: %d %s", p, r.Status, r.Header.Get("Content-Type"))
		}
		if r.Header.Get("Content-Security-Policy") != dashboard.ContentSecurityPolicy {
			t.Errorf("GET %s: CSP %q", p, r.Header.Get("Content-Security-Policy"))
		}
		if !strings.Contains(string(r.Body), `<div id="app">`) {
			t.Errorf("GET %s: not the dashboard: %.200s", p, r.Body)
		}
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/nowhere"}, {"GET", "/nowhere"}, {"GET", "/workflows/a/b"}, {"POST", "/v1/nowhere"},
	} {
		r := s.mustDo(t, c.method, c.path, nil)
		wantError(t, c.method+" "+c.path, r, http.StatusNotFound, "not_found")
	}
	r := s.mustDo(t, http.MethodPost, "/", []byte(`{}`), "Content-Type", "application/json")
	wantError(t, "POST /", r, http.StatusMethodNotAllowed, "method_not_allowed")
	// The API itself still needs the token.
	r = s.mustDo(t, http.MethodGet, "/v1/whoami", nil)
	wantError(t, "GET /v1/whoami without a token", r, http.StatusUnauthorized, "unauthorized")
}

func TestWhoami(t *testing.T) {
	const client, viewer, admin = "who-client-0123456789abcdef", "who-viewer-0123456789abcdef", "who-admin-0123456789abcdef"
	s := startStack(t, func(c *gateway.Config) {
		c.Auth.Tokens = []gateway.Token{
			{Token: client, Tenant: "acme", Role: gateway.RoleClient},
			{Token: viewer, Tenant: "acme", Role: gateway.RoleViewer},
			{Token: admin, Tenant: "ops", Role: gateway.RoleAdmin},
		}
	})
	open := startStack(t)
	cases := []struct {
		name   string
		s      *stack
		header []string
		want   gateway.Whoami
	}{
		{"client by cookie", s, []string{"Cookie", gateway.TokenCookie + "=" + client}, gateway.Whoami{TenantID: "acme", Auth: true, Role: gateway.RoleClient, MayControl: true}},
		{"viewer", s, []string{"Authorization", "Bearer " + viewer}, gateway.Whoami{TenantID: "acme", Auth: true, Role: gateway.RoleViewer}},
		{"admin acting for a tenant", s, []string{"Authorization", "Bearer " + admin, gateway.TenantHeader, "acme"}, gateway.Whoami{TenantID: "acme", Auth: true, Role: gateway.RoleAdmin, MayControl: true}},
		{"auth off", open, nil, gateway.Whoami{TenantID: gateway.DefaultTenant, MayControl: true}},
		{"auth off, tenant header", open, []string{gateway.TenantHeader, "beta"}, gateway.Whoami{TenantID: "beta", MayControl: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.s.mustDo(t, http.MethodGet, "/v1/whoami", nil, c.header...)
			if r.Status != http.StatusOK {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			var got gateway.Whoami
			if err := json.Unmarshal(r.Body, &got); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			if r.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q", r.Header.Get("Cache-Control"))
			}
		})
	}
}
