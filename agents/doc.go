// Package agents owns the agent interface and the worker runtime every agent
// runs on. An Agent describes itself with a Card (capabilities, description,
// example queries) and handles one plan step at a time: it gets a ctx, the
// step's input and its dependencies' outputs, and an Emitter for progress
// and artifact events, and returns its output.
//
// Data enters as io.agentbus.step.requested.v1 CloudEvents pulled from the
// capability's shared durable consumer on AGENTBUS_STEPS (every worker of a
// capability shares it: that is the scale-out) and leaves as a
// step.completed or step.failed reply on the workflow's reply subject,
// published with a deterministic Nats-Msg-Id so that a step redelivered and
// completed twice is recorded once. While a handler runs, the worker sends
// in-progress acks so a slow but live step is not redelivered.
//
// Built-in agents live in subpackages (agents/echo); no agent imports
// another. A *Worker is safe for concurrent use.
package agents
