package gateway

import (
	"net/http"

	"github.com/agentbus/agentbus/gateway/dashboard"
)

// routesDashboard serves the browser dashboard (package dashboard) at its
// page routes and /assets/, and GET /v1/whoami, which tells the page whom
// its token acts for. The pages carry no tenant's data, so they are open
// (openRoute); the page then calls the API with the token cookie.
func (g *Gateway) routesDashboard() {
	h, err := dashboard.New()
	if err != nil {
		// The assets are embedded at build time: this is a broken build.
		g.log.Error("dashboard: no embedded assets; GET / will be 404", "err", err)
	} else {
		for _, p := range dashboard.Patterns() {
			g.mux.Handle("GET "+p, h)
		}
	}
	g.mux.HandleFunc("GET /v1/whoami", g.whoami)
}

// dashboardRoute reports whether a matched route pattern ("GET /agents")
// is one of the dashboard's pages or assets.
func dashboardRoute(route string) bool {
	for _, p := range dashboard.Patterns() {
		if route == "GET "+p {
			return true
		}
	}
	return false
}

// Whoami is the answer to GET /v1/whoami: the tenant a request acts for and
// what it may do, so that a page shows only what its token allows.
type Whoami struct {
	TenantID string `json:"tenant_id"`
	// Auth is false when the gateway has no tokens: anyone may do anything.
	Auth bool `json:"auth"`
	// Role is the token's role; empty when auth is off.
	Role Role `json:"role,omitempty"`
	// MayControl is false for a viewer: no submit, cancel, approve, resume
	// or fork.
	MayControl bool `json:"may_control"`
	// User is whom the request acts for (its token's, or X-Agentbus-User
	// for an admin or with auth off): it sees that user's workflows only.
	User string `json:"user,omitempty"`
}

func (g *Gateway) whoami(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	out := Whoami{TenantID: tenant, Auth: g.cfg.Auth.mw.on(), MayControl: g.mayControl(r), User: userOf(r.Context())}
	if p, ok := r.Context().Value(principalKey{}).(principal); ok {
		out.Role = p.role
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}
