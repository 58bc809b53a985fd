// Package gateway owns agentbus's HTTP surface: submitting workflows
// (POST /v1/workflows), reading their state (GET /v1/workflows/{id}),
// following their events live with replay from an offset (SSE on
// GET /v1/workflows/{id}/events, WebSocket on …/ws), the tenant's live
// feed of workflow status changes (SSE on GET /v1/workflows/events,
// WebSocket on /v1/ws; tenantfeed*.go), controlling them
// (cancel, resume, approve, fork, checkpoint history, listing, and
// deleting an ended one with everything it left: DELETE
// /v1/workflows/{id}, purge.go), the agent
// registry and semantic discovery (GET /v1/agents, ?query=…&k=5), how
// busy each capability is for the tenant — its workers, and the tenant's
// steps queued by flow control, in flight and throttled, read from
// JetStream at most once a second (GET /v1/capabilities, capabilities.go),
// the A2A protocol (agent card, JSON-RPC at /a2a) and the legacy
// POST /tasks/send,
// conversations (session_id on a submission, an A2A contextId that is a
// token; GET /v1/sessions/{id} lists a session's turns; sessions.go),
// authentication (tokens → tenant, role and optionally user — a user's
// workflows, sessions and memory are their own: another user's workflow is
// a 404 on every surface and absent from lists and the tenant feed,
// auth_scope.go; off with no tokens), idempotent submission (an
// Idempotency-Key header: the same key and request answer one workflow,
// another request with the key is 409; idempotency.go) and per-tenant
// quotas (workflows running, steps queued, upload bytes: 429 with
// Retry-After; quota.go), and
// operations (GET /healthz, /readyz, /metrics), and an OpenTelemetry
// server span per request when Config.TracerProvider is set (trace.go).
//
// Data enters as HTTP requests whose bodies are validated against the
// embedded JSON Schemas (package schemas). Every error answer of the HTTP
// API is {"error": {"code", "message", "problems"}}, each Problem naming
// where the request went wrong: a query parameter, header or path
// parameter by name, a body value by JSON pointer (problems.go); no route
// is 404, another method 405 with Allow (noroute.go). A write's body must
// be application/json (415) and a cross-site write, or any cross-site use
// of the token cookie, is refused 403 (crossorigin.go). JSON-RPC at /a2a
// answers its own errors in JSON-RPC. Submissions leave as
// io.agentbus.workflow.submitted.v1 CloudEvents on the tenant's submit
// subject; events come back from the workflow's event log in JetStream, each
// as an events.Frame whose offset is its stream sequence.
//
// The protocols live in subpackages the gateway mounts on its mux
// (mount.go): WebSocket in gateway/ws, A2A in gateway/a2a. They never import
// the gateway: each declares the little it needs of it (authentication,
// scope, where a stream starts, the error shape) as an interface that
// mount.go implements. Every live stream — SSE here, WebSocket, A2A — reads
// events through gateway/internal/fanout (per-connection send queues and
// one shared consumer per followed workflow).
//
// The gateway holds no state that matters: run as many as you like behind a
// load balancer. A *Gateway is safe for concurrent use.
package gateway
