package ws

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// WebSocket protocol of GET /v1/workflows/{id}/ws?from=OFFSET&epoch=EPOCH.
//
// Every server frame is a text message holding one JSON events.Frame
// {offset, epoch, type, workflow_id, tenant_id, time, data}. The first is
// `connected` (data: gateway.Connected), then, if the cursor (from, epoch)
// is void, `reset` (gateway.FrameReset), then the workflow's events in
// offset order strictly after from (without from: from its first retained
// event), live as they are stored. Frames the gateway adds (connected,
// reset, control_result, frame_error) have offset 0; only event frames move
// a client's cursor. The stream ends after the terminal event (complete,
// error, cancelled) with a normal close; a resume at or after it gets
// `connected` and the normal close.
//
// A client may send, on the same socket, {"type":"cancel","reason":…} and
// {"type":"approve","approve":true|false,"comment":…,"step_id":…}; each is
// answered by a control_result frame (error "forbidden" for a viewer's
// token, or from a page on another origin that a cross-site POST would be
// refused for: the handshake is a GET, but these frames are writes), a
// malformed one by a frame_error frame whose problems carry JSON pointers —
// the connection stays open.
//
// Close codes:
//
//	1000 normal closure   the terminal event was sent, or nothing follows a resume
//	1001 going away       the gateway is shutting down: resume from your last offset
//	1008 policy violation idle: no pong and no client frame for IdleTimeout
//	1009 message too big  a client frame exceeded ReadLimit
//	1011 internal error   the event stream failed: resume from your last offset
//	4008 slow consumer    CloseSlowConsumer: resume from your last offset
//	(none)                a write blocked for IdleTimeout: the socket is dropped
//
// A client reconnecting with its last event offset (and the epoch it saw)
// gets exactly the events after it: no gap, no duplicate, same order.

// Subprotocol is the WebSocket subprotocol the gateway selects when a
// client offers it. A browser that sends its token as a subprotocol
// (gateway.BearerSubprotocol) must also offer this one: a browser fails a
// handshake whose answer selects none of the subprotocols it offered.
// Clients that offer none get none.
const Subprotocol = "agentbus.v1"

// CloseSlowConsumer is the close code of a WebSocket whose client, live on
// the workflow's events, fell more than Config.SendQueueBytes behind:
// "slow consumer, resume from your last offset". The frames it did receive
// are contiguous; nothing was skipped. (A client still replaying stored
// events is never closed for being slow: the gateway reads the stream only
// as fast as the client takes it.)
const CloseSlowConsumer = 4008

// Config configures the WebSocket endpoints; the gateway's SSE and A2A
// streams share SendQueueBytes and HubLinger. The zero value means
// defaults.
type Config struct {
	// SendQueueBytes bounds each connection's frames not yet written to the
	// socket; a live client further behind is closed with
	// CloseSlowConsumer. A single frame larger than the bound is still sent
	// to a caught-up client. Default 1 MiB.
	SendQueueBytes int
	// PingInterval is how often the server pings; default 20s.
	PingInterval time.Duration
	// IdleTimeout closes a connection (1008) after this long without a pong
	// or a client frame, and bounds how long one write may block; default 60s.
	IdleTimeout time.Duration
	// ReadLimit bounds one client frame; default 16 KiB.
	ReadLimit int64
	// WriteDelay lets frames gather for this long after one is queued
	// before the connection writes them, in one system call: fewer
	// wake-ups and writes per frame when a workflow emits fast to many
	// subscribers, for at most this much added latency. Default 0: write
	// at once.
	WriteDelay time.Duration
	// HubLinger keeps following a workflow for this long after its last
	// live subscriber left, so reconnecting clients find its hub still
	// there; default 10s.
	HubLinger time.Duration
	// OriginPatterns lets browsers on other origins connect (host patterns,
	// as websocket.AcceptOptions); the request's own host is always allowed.
	OriginPatterns []string
}

// SetDefaults replaces every zero field by its default.
func (c *Config) SetDefaults() {
	if c.SendQueueBytes == 0 {
		c.SendQueueBytes = 1 << 20
	}
	if c.PingInterval == 0 {
		c.PingInterval = 20 * time.Second
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 60 * time.Second
	}
	if c.ReadLimit == 0 {
		c.ReadLimit = 16 << 10
	}
	if c.HubLinger == 0 {
		c.HubLinger = 10 * time.Second
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.SendQueueBytes < 4096 {
		errs = append(errs, fmt.Errorf("gateway: websocket send queue %d bytes is below 4096", c.SendQueueBytes))
	}
	if c.PingInterval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("gateway: websocket ping interval %s is below 10ms", c.PingInterval))
	}
	if c.IdleTimeout <= c.PingInterval {
		errs = append(errs, fmt.Errorf("gateway: websocket idle timeout %s must exceed the ping interval %s", c.IdleTimeout, c.PingInterval))
	}
	if c.WriteDelay < 0 || c.WriteDelay > time.Second {
		errs = append(errs, fmt.Errorf("gateway: websocket write delay %s is outside [0, 1s]", c.WriteDelay))
	}
	if c.HubLinger < 0 {
		errs = append(errs, fmt.Errorf("gateway: websocket hub linger %s is negative", c.HubLinger))
	}
	if c.ReadLimit < 512 {
		errs = append(errs, fmt.Errorf("gateway: websocket read limit %d bytes is below 512", c.ReadLimit))
	}
	return errors.Join(errs...)
}

// serveWorkflow upgrades GET /v1/workflows/{id}/ws to a WebSocket that
// streams a workflow's events (see the protocol above). Problems found
// before the upgrade — tenant, a bad offset, an unknown workflow — are
// plain HTTP answers.
func (s *Server) serveWorkflow(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.gw.Tenant(w, r)
	if !ok {
		return
	}
	st, ok := s.gw.Workflow(w, r, tenant)
	if !ok {
		return
	}
	id := r.PathValue("id")
	c, cork, ok := s.accept(w, r)
	if !ok {
		return
	}
	defer s.sockets.Done()
	wc := newWSConn(s, c, cork, tenant, id, st.Epoch, s.gw.Refusal(r))
	wc.serve(r.Context(), st)
}
