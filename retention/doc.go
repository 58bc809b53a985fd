// Package retention owns how long an ended workflow is kept and how it is
// forgotten.
//
// A workflow leaves pieces in several stores: its checkpoint with every
// kept revision (KV AGENTBUS_CHECKPOINTS), its event log (its subject in
// AGENTBUS_EVENTS), stray replies and timers (AGENTBUS_REPLIES,
// AGENTBUS_TIMERS), its control record (KV AGENTBUS_CONTROL), its turn in
// a conversation (KV AGENTBUS_SESSIONS, package sessions) and, for an
// ingest workflow, what is left of its upload (object store
// AGENTBUS_UPLOADS, named by the checkpoint's "upload" metadata). The
// tenant's search index is not the workflow's and stays. Purger.Purge
// removes all of them together, for one ended workflow: the checkpoint is
// first deleted at the revision that was read (a fence: a resume racing
// the purge fails its revision check), then the other pieces go, then the
// checkpoint's subject is purged with its marker, so that nothing is left
// on disk. A purge that stopped half way is finished by the next one: the
// deleted checkpoint's older revisions still say what it was.
//
// Policy says how long: completed workflows 7 days after they ended, and
// failed, canceled or rejected ones 30 days, by default; per tenant over
// that (ParseTable, the --retention table). Sweeper applies it: one
// orchestrator at a time (a lease in KV AGENTBUS_LEASES, as the checkpoint
// scan's) walks the checkpoint bucket's stream in the order it was written,
// headers only, with one cursor per retention period: the cursor of period
// d reads the revisions written more than d ago, and purges each workflow
// whose newest revision that is, that has ended, and whose policy says d.
// Every revision is read once per cursor over its life, so a pass costs
// what was written in one interval, not what the bucket holds; a pass
// purges at most Config.MaxPerPass workflows and goes on from there the
// next time. A workflow that has not ended is never purged.
//
// Data enters as the checkpoint bucket's revisions (the sweep) and as
// (tenant, workflow) to purge (the gateway's DELETE /v1/workflows/{id});
// it leaves as purges of those stores and as Prometheus metrics.
//
// JetStream's own TTLs (a message's Nats-TTL, a KV key's TTL) do not fit:
// a checkpoint has up to 64 revisions and a TTL ends one message, not the
// key's history; the period depends on how the workflow ended, known only
// at its last write, long after its first events were stored; and the
// pieces in other stores would outlive it.
//
// Everything is safe for concurrent use.
package retention
