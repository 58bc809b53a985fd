// Package memory is the built-in memory agent (capability "memory"): a
// per-user (or per-tenant) long-term memory of what users say about
// themselves.
//
// Data enters as the step's input ({"query", "mode"}). In "remember" and
// "auto" mode the agent extracts statements such as "I work with Go", "my
// name is Ada" or "remember that the demo is on Friday" into facts with a
// normalised subject, predicate and object plus the original sentence, and
// stores each in the KV bucket AGENTBUS_MEMORY under "<tenant>.<user>.<hash
// of the normalised fact>" when the step names a user (the gateway sets
// it from the token), else under the tenant-wide "<tenant>.<hash>", so that
// the same fact said twice is stored once.
// In "recall" and "auto" mode it returns the tenant's facts relevant to the
// query: all of them when there are few, else the best few by lexical
// (and, with an embedder, embedding) similarity. Keys are always read and
// written under the requester's prefix: a user recalls only their own
// facts — never another user's, nor the tenant-wide ones (stored by
// tokens without a user, possibly what several people said before they
// had tokens of their own) — and a request without a user recalls only
// the tenant-wide facts, never a user's. A tenant never sees another's. Data leaves as the step's output (schema
// "agent.memory.output"), which the answer composer reads to personalise.
package memory
