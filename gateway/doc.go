// Package gateway owns agentbus's HTTP surface: submitting workflows
// (POST /v1/workflows), reading their state (GET /v1/workflows/{id}),
// following their events live with replay from an offset (SSE on
// GET /v1/workflows/{id}/events, WebSocket on …/ws), controlling them
// (cancel, resume, approve, fork, checkpoint history, listing), the agent
// registry and semantic discovery (GET /v1/agents, ?query=…&k=5), the A2A
// protocol (agent card, JSON-RPC at /a2a) and the legacy POST /tasks/send,
// authentication (tokens → tenant and role; off with no tokens), and
// operations (GET /healthz, /readyz, /metrics).
//
// Data enters as HTTP requests whose bodies are validated against the
// embedded JSON Schemas (package schemas); a bad body gets 400 with the JSON
// pointer of every bad field, an oversize one 413. Submissions leave as
// io.agentbus.workflow.submitted.v1 CloudEvents on the tenant's submit
// subject; events come back from the workflow's event log in JetStream, each
// as an events.Frame whose offset is its stream sequence.
//
// The gateway holds no state that matters: run as many as you like behind a
// load balancer. A *Gateway is safe for concurrent use.
package gateway
