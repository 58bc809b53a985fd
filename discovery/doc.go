// Package discovery owns the agent registry and semantic discovery. Workers
// register each agent instance in KV AGENTBUS_AGENTS — card, capabilities,
// example queries, an embedding of its description, live load and health —
// with a per-key TTL that their heartbeat refreshes, so a dead worker's
// registration disappears on its own. Readers (the gateway, the
// orchestrator, `agentbus agents`) list instances with their health and
// rank agents against a query by embedding similarity ("embed, vector top-k,
// then route").
//
// Readers rank from an in-memory index, not from the bucket: a KV watch
// keeps every registration, grouped into agents by name, with the agents'
// card vectors (embedded with the reader's embedder, once) in a contiguous
// matrix; a query is one dot product per agent and a top-k heap that
// prefers, among agents about as similar, healthy and less loaded ones
// (search.go). The index follows puts, deletes and TTL expiry, and watches
// again after a watch ends (watch.go).
//
// Data enters as Registrations from workers and queries from callers, and
// leaves as Registrations and Matches. A *Registry is safe for concurrent use.
//
// This package is not in DESIGN.md §4: it exists because the worker runtime
// (agents/) writes registrations while the gateway and the orchestrator,
// which must not import agents/, read them.
package discovery
