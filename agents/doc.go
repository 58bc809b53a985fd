// Package agents owns the agent interface and the worker runtime every agent
// runs on. An Agent describes itself with a Card (capabilities, description,
// example queries) and handles one plan step at a time: it gets a ctx, the
// step's input and its dependencies' outputs, and an Emitter for progress
// and artifact events, and returns its output.
//
// Data enters as io.agentbus.step.requested.v1 CloudEvents pulled from the
// capability's shared durable consumer on AGENTBUS_STEPS (every worker of a
// capability shares it: that is the scale-out) and leaves as a
// step.completed or step.failed answer: handed straight to an orchestrator
// on the workflow's result subject (bus.Hand), which says so once the
// workflow's checkpoint records it, or else published on the workflow's
// reply subject with a deterministic Nats-Msg-Id so that a step redelivered
// and completed twice is recorded once. The step is acked only after one
// of the two. While a handler runs, the worker sends
// in-progress acks so a slow but live step is not redelivered.
//
// Built-in agents live in subpackages (agents/echo); no agent imports
// another. A *Worker is safe for concurrent use.
package agents
