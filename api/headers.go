package api

// Headers a client sends to the gateway.
const (
	// TenantHeader names the tenant of a request: the tenant with auth
	// off, or the one an admin token acts on; absent means DefaultTenant.
	TenantHeader = "X-Agentbus-Tenant"
	// UserHeader names whom a request acts for, when the token does not
	// (an admin token, or auth off).
	UserHeader = "X-Agentbus-User"
)

// DefaultTenant is the tenant of requests that name none.
const DefaultTenant = "default"
