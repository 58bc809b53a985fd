// Package bus owns agentbus's NATS client side: the connection, idempotent
// provisioning of the JetStream streams and KV buckets of DESIGN.md §2,
// publishing CloudEvents with deterministic Nats-Msg-Id dedup keys (sent
// again, with the same key, while a stream elects a leader: election.go),
// durable consume loops with explicit acks, core request/verdict hand-offs
// for what a durable way backs (hand.go: Hand and Take), ordered replay of a workflow's
// event log and its live tail without a consumer (follow_live.go: the
// events stream republishes each event with its offset and the
// workflow's previous one, and a follower reads any gap back), the KV stores (checkpoints, control; a "not found" is
// confirmed by the bucket's leader), and what a reconciler asks of the
// server (reconcile.go: where a consumer stands on a stored message, a
// consumer leader stepdown, the messages a work queue still holds).
//
// Data enters as events.Envelope values to publish and leaves as decoded
// Deliveries (durable, work-queue consumers) or Records (ordered replay).
// Every incoming message is decoded and validated by package events before a
// handler sees it; a malformed message is terminated (never redelivered) and
// reported through ConsumeConfig.OnMalformed.
//
// The embedded nats-server is not here: it moved to package broker, so
// that a program importing bus (a worker, the SDK) does not link the
// server through it. Connect reaches a server of the same process by its client
// URL and Config.InProcess (a *broker.Server, seen here only as the
// one-method InProcessServer interface).
//
// This is the only package besides cmd/ that imports nats.go. A *Bus is
// safe for concurrent use.
package bus
