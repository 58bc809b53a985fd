// Package orchestrator owns the life of a workflow: it consumes submissions,
// plans (an explicit plan; for a bare query a Planner: the heuristic seed
// flows, an LLM through an OpenAI-compatible endpoint, semantic discovery,
// echo as the last resort), applies control messages (cancel, resume,
// approve/reject) and forks from checkpoint revisions, validates
// the plan and groups it into Kahn stages, dispatches each step whose
// dependencies are done as io.agentbus.step.requested.v1 on the step's
// capability subject, collects replies, passes dependency outputs on, and
// emits the workflow's client events (status, progress, complete, error).
//
// Data enters as CloudEvents from the submissions and replies streams (shared
// durable consumers: run as many orchestrators as you like) and leaves as
// step requests and client events. A workflow's whole state lives in its
// checkpoint in KV AGENTBUS_CHECKPOINTS, written with optimistic concurrency
// on the KV revision. Everything a transition publishes is first written to
// the checkpoint's outbox and only then published with deterministic
// Nats-Msg-Id keys, so a crash between the write and the publish is mended by
// the redelivered trigger and nothing is published twice.
//
// An *Orchestrator is safe for concurrent use.
package orchestrator
