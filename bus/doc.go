// Package bus owns agentbus's NATS side: the embedded nats-server, the
// connection, idempotent provisioning of the JetStream streams and KV buckets
// of DESIGN.md §2, publishing CloudEvents with deterministic Nats-Msg-Id dedup
// keys (sent again, with the same key, while a stream elects a leader:
// election.go), durable consume loops with explicit acks, ordered replay of a
// workflow's event log, the KV stores (checkpoints, control; a "not found"
// is confirmed by the bucket's leader), and what a reconciler asks of the
// server (reconcile.go: where a consumer stands on a stored message, a
// consumer leader stepdown, the messages a work queue still holds).
//
// Data enters as events.Envelope values to publish and leaves as decoded
// Deliveries (durable, work-queue consumers) or Records (ordered replay).
// Every incoming message is decoded and validated by package events before a
// handler sees it; a malformed message is terminated (never redelivered) and
// reported through ConsumeConfig.OnMalformed.
//
// This is the only package besides cmd/ that imports nats.go and
// nats-server. A *Bus is safe for concurrent use; *Server too.
package bus
