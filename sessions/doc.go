// Package sessions owns conversations: the turns of a session (what was
// asked, how it was resolved, what was answered and cited), its rolling
// summary, and the deterministic rules that resolve a follow-up ("and what
// about the read lock?") against the turns before it.
//
// Data enters as finished workflows of a session, appended by the
// orchestrator (Store.Append, idempotent by workflow id), and leaves as
// events.Conversation in every step request of a later turn
// (Session.Conversation), and as the session itself for GET
// /v1/sessions/{id} (Store.Load, read by the gateway).
//
// A session is one key of the KV bucket AGENTBUS_SESSIONS,
// "<tenant>.<user>.<session>" (subjects.SessionKey; user "_" for a
// tenant-wide session), holding the whole session as one JSON document.
// One key per session, not one message per turn in a stream, because an
// append must be idempotent whenever it is redone (the orchestrator redoes
// a completion after a crash, however late), and a compare-and-set on the
// key's revision gives that and an atomic rolling summary in one write,
// where a stream's Nats-Msg-Id dedup holds only within its window. The
// bucket keeps one revision per key and drops a key its TTL (--session-ttl,
// default 30 days) after its last write: a session is forgotten that long
// after its newest turn. A document holds at most Config.MaxTurns turns in
// full (older ones live on in the summary), each answer cut to
// Config.MaxAnswer bytes, so it stays far below the server's message size.
//
// The package imports bus, events and subjects only (DESIGN.md §4), so the
// orchestrator and the gateway may both use it; the LLM rewrite and
// summary are the orchestrator's, behind the Summarizer interface here.
// Everything is safe for concurrent use.
package sessions
