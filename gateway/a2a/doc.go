// Package a2a serves the gateway's A2A protocol surface: agentbus as one
// A2A agent whose skills are the capabilities registered right now (the
// agent card at /.well-known/agent-card.json), JSON-RPC 2.0 at POST /a2a
// (message/send, message/stream, tasks/get, tasks/cancel,
// tasks/resubscribe), and the seed system's legacy POST /tasks/send (its
// "messages": the last is the query, the earlier ones seed the task's
// session), with GET /.well-known/agent.json, the card's older name.
//
// A message's text parts are the query; its data part a plan or search
// options (top_k, profiles, filters …), which travel in the submission's
// metadata (events.MetadataSearchOptions) for the orchestrator to give
// the planned search step; its file parts are uploaded and indexed
// (Gateway.Upload) before the task starts.
//
// A task is a workflow. A message enters as JSON-RPC params, checked
// field by field (every error a JSON-RPC error object whose data names the
// JSON pointer at fault), and leaves as a workflow submission the gateway
// stores (Gateway.Store) on the tenant's submit subject; a follow-up
// message to an input-required task becomes an approval on the workflow's
// control subject. Tasks are read back from the workflow's checkpoint, and
// streamed from its event log through the gateway's fan-out, as
// Server-Sent Events of A2A status and artifact updates.
//
// The gateway mounts a Server on its mux (Register) and gives it, through
// Deps, what it needs of the gateway: who a request is and what it may see
// (Gateway), the bus, the checkpoints, the agent registry, the fan-out,
// its logger, metrics and limits. The package never imports the gateway.
package a2a
