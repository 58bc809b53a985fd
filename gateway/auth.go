package gateway

import (
	"fmt"
	"net/http"

	"github.com/agentbus/agentbus/subjects"
)

// AuthConfig configures authentication (tokens → tenant and role). The
// zero value means auth off: a single-operator setup where the tenant is
// the X-Agentbus-Tenant header (default "default").
type AuthConfig struct{}

func (c *AuthConfig) setDefaults() {}

// Validate reports every problem with the configuration.
func (c AuthConfig) Validate() error { return nil }

func (g *Gateway) routesAuth() {}

// wrap puts the cross-cutting handlers (authentication, metrics) around
// every route.
func (g *Gateway) wrap(h http.Handler) http.Handler { return h }

// tenant returns the request's tenant or writes a 400.
func (g *Gateway) tenant(w http.ResponseWriter, r *http.Request) (string, bool) {
	t := r.Header.Get(TenantHeader)
	if t == "" {
		return DefaultTenant, true
	}
	if err := subjects.ValidTenant(t); err != nil {
		writeError(w, http.StatusBadRequest, apiError{Code: "invalid_tenant", Message: fmt.Sprintf("header %s: %v", TenantHeader, err)})
		return "", false
	}
	return t, true
}
