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

// Idempotent submission (SubmitOnce).
const (
	// IdempotencyHeader carries a client's idempotency key on POST
	// /v1/workflows and on the A2A door's message/send and message/stream:
	// the same key within IdempotencyWindow gets the same workflow.
	IdempotencyHeader = "Idempotency-Key"
	// ReplayedHeader is "true" on the answer to a submission that an
	// earlier one with the same key had made: the workflow is that one's.
	ReplayedHeader = "Idempotent-Replayed"
	// NATSIdempotencyHeader is the NATS message header a submitter that
	// publishes on agentbus.<tenant>.workflow.submit by itself may set to
	// an idempotency key. Only an orchestrator that checks it
	// (ClaimDelivered) honours it; the Go SDK's NATS client claims its key
	// before it publishes instead, and sends no header.
	NATSIdempotencyHeader = "Agentbus-Idempotency-Key"
)
