package main

// layer is one rung of the ladder: its packages may import packages of
// their own layer or of one below, never of one above.
type layer struct {
	// role says what the layer's packages are for.
	role string
	// patterns are import paths relative to the module: "." is the root
	// package, "x/..." is x and every package below it. A pattern that
	// matches no package (one that has not landed yet) is fine.
	patterns []string
}

// layers is DESIGN.md §4's direction of imports, lowest first: the target
// after #18, which is why some packages (workflow, api, broker) do not
// exist yet. A package matched by two patterns belongs to the exact one,
// else to the longer tree.
var layers = []layer{
	{role: "leaves: names on the wire, schemas, query reading, process plumbing, model and search clients; the standard library and their own libraries only",
		patterns: []string{"schemas", "subjects", "querykind", "internal/datadir", "internal/natsauth", "internal/telemetry", "internal/spans", "llm/...", "retrieval/..."}},
	{role: "the wire: CloudEvent types, payloads, encode and decode",
		patterns: []string{"events"}},
	{role: "the engine: checkpoint and task types, states, the pure Apply",
		patterns: []string{"workflow"}},
	{role: "request and response types; the NATS connection and the broker behind it; the tool permissions table",
		patterns: []string{"api", "bus", "broker", "permissions"}},
	{role: "state kept over the bus (agent registry, sessions, retention, schedules) and the public Go SDK, which never links a server",
		patterns: []string{"discovery", "sessions", "retention", "schedule", "client"}},
	{role: "the roles: agents and their runtime, orchestrator, gateway; adapters to other ecosystems",
		patterns: []string{"agents/...", "orchestrator", "gateway/...", "watermill", "interop/...", "mcpserver"}},
	{role: "agentbus.Run: the whole bus embedded in a Go program",
		patterns: []string{"."}},
	{role: "the binary, examples, test support and tools, which may import anything",
		patterns: []string{"cmd/...", "bus/bustest", "internal/stacktest", "internal/e2e", "internal/gencorpus", "internal/mkdict", "internal/s2repro", "internal/layers", "examples/...", "corpus/..."}},
}

// apart lists groups of one layer that never import one another: the
// roles meet only on subjects (DESIGN.md §4), so the gateway reads
// checkpoints through the engine's types, not the orchestrator's, and
// neither imports an agent.
var apart = []string{"agents/...", "orchestrator", "gateway/..."}

// allowed lists the imports that break the layers today (module-relative
// paths): none since the client stopped importing the gateway (#22).
var allowed = []edge{}
