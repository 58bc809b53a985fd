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
// Data enters as CloudEvents from the submissions, replies and timers
// streams (shared durable consumers: run as many orchestrators as you like)
// and as step results workers hand straight to one of the orchestrators
// (bus.Take on subjects.AllResults, queue group ResultQueue; answered only
// once the checkpoint records them and the transition's outbox is
// published, and recorded once if the worker sends them through the
// replies stream too) and leaves as step requests, timers and client events. A
// worker handing a result over offers the slot it frees; when the
// transition dispatches a step of that capability and nothing waits for its
// workers, the request goes back with the verdict instead of being
// published (eager dispatch, eager.go), marked handed in the outbox, and
// its lease recovers it if that worker never runs it. A workflow's whole
// state lives in its checkpoint in KV AGENTBUS_CHECKPOINTS, written with
// optimistic concurrency on the KV revision. Everything a transition
// publishes is first written to the checkpoint's outbox and only then
// published with deterministic Nats-Msg-Id keys, so a crash between the
// write and the publish is mended by the redelivered trigger and nothing is
// published twice.
//
// Durable timers live in their own stream, AGENTBUS_TIMERS, one subject per
// workflow, read by a shared consumer with no bound on waiting messages:
// the workflow's deadline waits on that consumer; its watchdog timer waits
// as a message schedule that the server fires when it is due (nats-server
// 2.12 or later), so that one per running workflow costs nothing while it
// waits.
//
// Nothing acknowledged is assumed to survive: a JetStream server killed
// before it flushes may lose a step request, a reply, a timer or the
// trigger of a stored outbox. Two mechanisms heal a workflow that would
// wait forever. The step watchdog (lease.go): every dispatched step
// attempt has a lease (Config.StepLease, --step-lease); when one is due and
// the attempt is still the task's live one, the orchestrator reads the
// streams — the request by its stored sequence in AGENTBUS_STEPS (queued or
// running while it is there), then the workflow's replies in
// AGENTBUS_REPLIES — and, finding neither, dispatches the step again as its
// next attempt; otherwise it looks again a lease later. Replies of every
// attempt since the plan's last dispatch count: the first is recorded,
// every later one ignored, and a failure of an attempt given up as lost
// fails nothing. The checkpoint scan (scan.go) is the backstop for a lost
// timer or trigger: one orchestrator at a time (a lease in KV
// AGENTBUS_LEASES that carries a cursor) reads, headers only, the
// checkpoint revisions written since its cursor and at least a lease ago,
// at most Config.ScanBudget a pass, and heals every active workflow whose
// newest revision that is: publishes its stranded outbox, expires a passed
// deadline, examines each working step as the watchdog would, and re-arms
// the timers the server lost.
//
// A consumer may also hold a message as delivered and never hand it out
// again (seen on a cluster after a node's SIGKILL). The reconciler covers
// it: a step whose request its consumer holds is recovered by stepping the
// consumer's leader down, then, past Config.StepHold, by a new, fenced
// attempt (recover.go); and the scan-lease holder starts from the stream a
// stored submission the submissions consumer holds with no checkpoint past
// Config.SubmitBound (reconcile.go). Each recovery is logged, counted and
// written into the workflow's log as a status event with its kind.
//
// Conversations (session.go): a submission with a session id is a turn of
// that session (package sessions, KV AGENTBUS_SESSIONS, per tenant and
// user). At submit the session is loaded and a follow-up ("and what about
// its read lock?") is resolved against its turns — deterministically, or
// by Config.Rewriter (an LLM) whose answer is checked, with the
// deterministic resolution as fallback; the workflow runs the resolved
// query and its plan explanation says so. Every step request carries the
// conversation (the newest turns, the rolling summary, the query as typed)
// and the submission's user. When the workflow ends (completed, failed or
// canceled) its turn is appended before the checkpoint that says so is
// stored; the append is idempotent by workflow id, so a redone ending
// never adds a turn.
//
// An *Orchestrator is safe for concurrent use.
package orchestrator
