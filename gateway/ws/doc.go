// Package ws serves the gateway's WebSocket streams: a workflow's events
// on GET /v1/workflows/{id}/ws and the tenant feed on GET /v1/ws, each
// with exact resume from an offset, and cancel/approve frames from the
// client (the protocol is described in protocol.go).
//
// The gateway mounts a Server on its mux (Register) and gives it, through Deps, what
// a stream needs of it: who a request is and where its stream starts
// (Gateway, whose answers before the upgrade are plain HTTP), the fan-out
// of events shared with its SSE and A2A streams (fanout.Hubs), the bus
// for control frames, its logger and its metrics. Events enter from the
// fan-out as encoded frames in each connection's bounded send queue and
// leave as text messages written corked, one system call per batch;
// client frames enter through the reader and leave as control requests on
// the workflow's control subject. The package never imports the gateway.
package ws
