package ws

import (
	"context"
	"log/slog"
	"net/http"
	"sync"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway/internal/fanout"
	"github.com/agentbus/agentbus/schemas"
)

// Gateway is what the WebSocket endpoints ask of the HTTP gateway that
// mounts them: who a request is, where its stream starts, what it may do,
// and the gateway's error shape. A method given the ResponseWriter that
// reports false has answered the request itself (a plain HTTP answer:
// the handshake never happens).
type Gateway interface {
	// Tenant authenticates r and returns the tenant it acts for.
	Tenant(w http.ResponseWriter, r *http.Request) (string, bool)
	// Workflow reads the cursor of a stream of the tenant's workflow
	// r.PathValue("id") (?from=, ?epoch=) and resolves where it starts.
	Workflow(w http.ResponseWriter, r *http.Request, tenant string) (Start, bool)
	// TenantFeed does the same for the tenant feed (?from=, ?epoch=,
	// ?status=); its Start carries Feed.
	TenantFeed(w http.ResponseWriter, r *http.Request, tenant string) (Start, bool)
	// Refusal is nil when r's connection may send control frames, else
	// the answer to one of the given action ("cancel", "approve"): a
	// viewer's token, a page on another origin.
	Refusal(r *http.Request) func(action string) string
	// Refuse answers a handshake coder/websocket refused (its status and
	// text/plain message) in the gateway's error shape.
	Refuse(w http.ResponseWriter, r *http.Request, status int, msg string)
	// ErrorBody is the gateway's error body {code, message, problems},
	// each problem at its pointer into a JSON document: the data of a
	// frame_error frame.
	ErrorBody(code, message string, probs []schemas.Problem) any
}

// Requester sends a control request to the orchestrators and returns
// their answer: *bus.Bus.
type Requester interface {
	Request(ctx context.Context, subject string, env events.Envelope) ([]byte, error)
}

var _ Requester = (*bus.Bus)(nil)

// Start is where one WebSocket stream begins, decided once at connect time
// by the gateway.
type Start struct {
	// Epoch is the events stream's current epoch.
	Epoch string
	// Opening are the frames every stream starts with: connected, then
	// reset if the cursor was void.
	Opening []events.Frame
	// After is the offset the events follow (exclusive).
	After uint64
	// Live says the stream starts caught up: nothing to replay.
	Live bool
	// Reset and Replay count the stream in resets_total (a reset frame is
	// in Opening) and replays_total (it starts before the live tail).
	Reset, Replay bool
	// Done means nothing follows the opening frames: the stream closes
	// normally right after them.
	Done bool
	// Feed, for the tenant feed, starts the feeder of its frames.
	Feed func(ctx context.Context, sub *fanout.Subscriber) *fanout.Feeder
}

// Metrics are the gateway's per-stream counters, labelled kind="ws".
type Metrics struct {
	FramesSent, Resets, Replays prometheus.Counter
}

// Deps is what a Server takes from the gateway that mounts it. Every field
// is required.
type Deps struct {
	Gateway Gateway
	// Hubs are the gateway's fan-out, shared with its SSE and A2A streams.
	Hubs *fanout.Hubs
	// Bus carries control frames to the orchestrators.
	Bus     Requester
	Logger  *slog.Logger
	Metrics Metrics
}

// Server serves the WebSocket endpoints. It is safe for concurrent use.
type Server struct {
	cfg     Config
	gw      Gateway
	hubs    *fanout.Hubs
	bus     Requester
	log     *slog.Logger
	metrics Metrics

	// sockets counts running WebSocket handlers, which http.Server's
	// Shutdown does not wait for (their connections are hijacked).
	sockets sync.WaitGroup
	mu      sync.Mutex
	// closed is set (under mu) when Shutdown starts waiting for the
	// handlers: a handler that starts later is turned away, so sockets.Add
	// never races sockets.Wait.
	closed bool
}

// New returns a Server; cfg must have its defaults set and be valid.
func New(cfg Config, d Deps) *Server {
	return &Server{cfg: cfg, gw: d.Gateway, hubs: d.Hubs, bus: d.Bus, log: d.Logger, metrics: d.Metrics}
}

// socketStarts counts a WebSocket handler in, unless the server is
// already waiting for them to end.
func (s *Server) socketStarts() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.sockets.Add(1)
	return true
}

// Shutdown turns new WebSockets away and waits for the running handlers
// (whose request context has ended: they close with 1001) until ctx ends,
// then returns ctx's error. It is safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	waited := make(chan struct{})
	go func() { s.sockets.Wait(); close(waited) }()
	select {
	case <-waited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// accept upgrades r to a WebSocket, or answers it: a refused handshake in
// the gateway's error shape, a shutting-down server with 1001. The caller
// must call s.sockets.Done when it got a connection.
func (s *Server) accept(w http.ResponseWriter, r *http.Request) (*websocket.Conn, *corkConn, bool) {
	cw := &corkWriter{ResponseWriter: w}
	rw := &refusalWriter{corkWriter: cw}
	c, err := websocket.Accept(rw, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}, OriginPatterns: s.cfg.OriginPatterns})
	if err != nil || cw.conn == nil {
		rw.answer(r, s.gw) // Accept refused: in the error shape, not its text/plain
		return nil, nil, false
	}
	if !s.socketStarts() {
		_ = c.Close(websocket.StatusGoingAway, "gateway shutting down")
		return nil, nil, false
	}
	c.SetReadLimit(s.cfg.ReadLimit)
	return c, cw.conn, true
}

// Register adds the WebSocket routes to mux.
func (s *Server) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/workflows/{id}/ws", s.serveWorkflow)
	mux.HandleFunc("GET /v1/ws", s.serveTenant)
}
