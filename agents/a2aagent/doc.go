// Package a2aagent serves the skills of a remote A2A agent as agentbus
// capabilities. A Remote fetches the agent's card (a2a-go's card resolver,
// /.well-known/agent-card.json), turns each skill into an agents.Agent
// whose one capability is the skill's id made a subject token (with an
// optional prefix), and runs the steps of those capabilities by calling
// the agent with a2a-go's JSON-RPC client: message/stream when the card
// says the agent streams, else message/send followed by tasks/get until the
// task settles.
//
// Data enters as an agents.Request (the step's input, its dependencies'
// outputs and the workflow's query become one user message: a text part and,
// for structured input, a data part; the skill's id travels in the
// message's metadata as "skill_id") and leaves as the task's artifacts and
// final message, as JSON (Output). While the task runs, its status updates
// become progress events and its artifact updates artifact events of the
// step. When the step's context ends (its workflow was canceled, it timed
// out, the worker is stopping) the remote task is canceled with
// tasks/cancel.
//
// The card is fetched again every Config.Refresh on the worker's heartbeat
// (agents.HealthChecker): while it does not answer, every skill of the
// agent reads "unhealthy" in the registry, steps fail at once with
// ErrUnavailable (which the worker retries with backoff) and calls in
// flight are stopped with it rather than left to hang.
//
// Per-agent HTTP headers (an Authorization token, say) are taken from
// environment variables named in the Endpoint, never from the command line.
// A *Remote and its agents are safe for concurrent use.
package a2aagent
