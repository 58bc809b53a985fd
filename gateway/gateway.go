package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway/a2a"
	"github.com/agentbus/agentbus/gateway/internal/fanout"
	"github.com/agentbus/agentbus/gateway/ws"
	"github.com/agentbus/agentbus/permissions"
	"github.com/agentbus/agentbus/retention"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/sessions"
	"github.com/agentbus/agentbus/subjects"
)

// Config configures a Gateway. The zero value of every field but Bus means
// its default.
type Config struct {
	Bus *bus.Bus
	// Addr is the listen address HOST:PORT; default 127.0.0.1:8080.
	Addr string
	// MaxBodyBytes bounds request bodies; default 1 MiB.
	MaxBodyBytes int64
	// AcceptTimeout bounds how long POST /v1/workflows waits for an
	// orchestrator to record the workflow; default 5s. Past it the answer is
	// still 202: the submission is durable and runs when an orchestrator can.
	AcceptTimeout time.Duration
	// StoreTimeout bounds how long a submission, a control request or a
	// signal waits for its stream or an orchestrator to answer: a stream
	// electing a leader after a node loss is waited out, the message sent
	// again with the same dedup id, until a leader answers. Past it the
	// answer is 503 with Retry-After. Default 20s.
	StoreTimeout time.Duration
	// KeepAlive is the interval of SSE keepalive comments; default 15s.
	KeepAlive time.Duration
	Logger    *slog.Logger
	// WS configures WebSocket streams (its send queue and hub linger are
	// every stream's); Auth, tokens and tenants; A2A, the A2A protocol
	// surface.
	WS   ws.Config
	Auth AuthConfig
	A2A  a2a.Config
	// Documents bounds uploads to POST /v1/documents.
	Documents DocumentsConfig
	// Quotas bound what each tenant has at once: workflows running, steps
	// queued, bytes uploaded (quota.go). The zero value sets none.
	Quotas QuotaConfig
	// Permissions is the tool permissions table (--tool-permissions): an
	// explicit plan with a step its tenant and the token's role may not
	// run is refused with 403 permission_denied before it is stored. The
	// orchestrator enforces the same table on every plan, planned ones
	// too. Nil allows all.
	Permissions permissions.Table
	// CORS lets pages on other origins call the API; its origins are also
	// allowed to open WebSockets.
	CORS CORSConfig
	// Metrics, when set, is served at GET /metrics beside the gateway's
	// own metrics: `agentbus serve` passes the orchestrator's and the
	// workers' registry. It must not hold the go_* and process_*
	// collectors, which the gateway registers itself.
	Metrics prometheus.Gatherer
	// Registry answers GET /v1/agents: `agentbus serve` shares the
	// orchestrator's, so one index serves both; default: one opened on Bus
	// with the local embedder.
	Registry *discovery.Registry
	// TracerProvider, when set, records a span per HTTP request (otelhttp)
	// and per submission published, whose context the submission carries
	// as ce-traceparent (trace.go). Unset, an incoming traceparent header is
	// still passed on.
	TracerProvider trace.TracerProvider
}

func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.AcceptTimeout == 0 {
		c.AcceptTimeout = 5 * time.Second
	}
	if c.StoreTimeout == 0 {
		c.StoreTimeout = 20 * time.Second
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = 15 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.WS.SetDefaults()
	c.Auth.setDefaults()
	c.A2A.SetDefaults()
	c.CORS.setDefaults()
	c.Documents.setDefaults()
	c.Quotas.setDefaults()
	c.WS.OriginPatterns = slices.Concat(c.WS.OriginPatterns, c.CORS.wsOriginPatterns()) // never into the caller's array
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Bus == nil {
		errs = append(errs, errors.New("gateway: config needs Bus"))
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("gateway: http address %q: want HOST:PORT: %w", c.Addr, err))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Errorf("gateway: max body %d bytes is below 1024", c.MaxBodyBytes))
	}
	if c.StoreTimeout < time.Second {
		errs = append(errs, fmt.Errorf("gateway: store timeout %s is below 1s", c.StoreTimeout))
	}
	if c.KeepAlive < time.Second {
		errs = append(errs, fmt.Errorf("gateway: keepalive %s is below 1s", c.KeepAlive))
	}
	errs = append(errs, c.WS.Validate(), c.Auth.Validate(), c.A2A.Validate(), c.CORS.Validate(), c.Documents.Validate(), c.Quotas.Validate(), c.Permissions.Validate())
	return errors.Join(errs...)
}

// Gateway serves the HTTP API.
type Gateway struct {
	cfg         Config
	bus         *bus.Bus
	log         *slog.Logger
	checkpoints *bus.KV
	// idem is the idempotency bucket, opened on first use; quotas counts
	// and admits (quota.go).
	idem     claimsCache
	quotas   *quotas
	registry *discovery.Registry
	sessions *sessions.Store
	// purger deletes ended workflows (DELETE /v1/workflows/{id}, purge.go).
	purger *retention.Purger
	mux    *http.ServeMux
	// writes refuses cross-site state-changing requests (crossorigin.go);
	// nil refuses none.
	writes *http.CrossOriginProtection
	// hubs share one consumer per followed workflow among its live
	// subscribers (SSE, WebSocket, A2A); stop ends them.
	hubs *fanout.Hubs
	stop context.CancelFunc
	// flow caches the counts of GET /v1/capabilities (capabilities.go).
	flow flowCache
	// scheds is the schedules' store, opened on first use (schedules.go).
	scheds scheduleStore
	// ws and a2a serve the WebSocket and A2A protocols (mount.go).
	ws  *ws.Server
	a2a *a2a.Server
	mcp http.Handler

	mu       sync.Mutex
	listener net.Listener
	server   *http.Server
}

// New checks cfg and prepares the routes.
func New(ctx context.Context, cfg Config) (*Gateway, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Every message in and out is checked against its schema: compiled
	// now, not by the first one.
	if err := schemas.Load(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	kv, err := cfg.Bus.KV(ctx, subjects.BucketCheckpoints)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	reg := cfg.Registry
	if reg == nil {
		if reg, err = discovery.New(ctx, cfg.Bus, nil); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
	}
	writes, err := newWriteProtection(cfg.CORS, cfg.Auth.mw.on())
	if err != nil {
		return nil, err
	}
	sess, err := sessions.New(sessions.Config{Bus: cfg.Bus, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	purger, err := retention.NewPurger(ctx, cfg.Bus, sess)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g := &Gateway{cfg: cfg, bus: cfg.Bus, log: cfg.Logger.With("component", "gateway"), checkpoints: kv, registry: reg, sessions: sess,
		mux: http.NewServeMux(), writes: writes, quotas: newQuotas(cfg.Quotas, cfg.Bus, kv), purger: purger}
	if slices.Contains(cfg.CORS.Origins, "*") && !cfg.Auth.mw.on() {
		g.log.Warn(`cors origin "*" with auth off lets any page read, not write: writes from another origin need it listed by name in --cors-origins`)
	}
	// Hubs outlive the requests that start them; they end with ctx or Run.
	hctx, stop := context.WithCancel(ctx)
	g.hubs, g.stop = fanout.New(hctx, fanout.Config{Source: cfg.Bus, Logger: g.log, BufferBytes: cfg.WS.SendQueueBytes / 2, Linger: cfg.WS.HubLinger,
		Hubs: g.stats().hubs, SlowCloses: g.stats().slowCloses}), stop
	g.mount()
	g.routes()
	return g, nil
}

func (g *Gateway) routes() {
	g.mux.HandleFunc("GET /healthz", g.healthz)
	g.mux.HandleFunc("GET /health", g.healthz) // the seed system's name for it
	g.mux.HandleFunc("POST /v1/workflows", g.submit)
	g.mux.HandleFunc("GET /v1/workflows/{id}", g.state)
	g.mux.HandleFunc("DELETE /v1/workflows/{id}", g.purge)
	g.mux.HandleFunc("GET /v1/workflows/{id}/events", g.sse)
	g.mux.HandleFunc("GET /v1/agents", g.agents)
	g.mux.HandleFunc("GET /v1/workflows", g.list)
	g.mux.HandleFunc("GET /v1/workflows/{id}/checkpoints", g.checkpointsHistory)
	g.mux.HandleFunc(routePayload, g.payload)
	g.mux.HandleFunc("POST /v1/workflows/{id}/fork", g.fork)
	g.mux.HandleFunc("POST /v1/workflows/{id}/cancel", g.control(events.ActionCancel))
	g.mux.HandleFunc("POST /v1/workflows/{id}/resume", g.control(events.ActionResume))
	g.mux.HandleFunc("POST /v1/workflows/{id}/approve", g.control(events.ActionApprove))
	g.mux.HandleFunc("POST /v1/workflows/{id}/pause", g.control(events.ActionPause))
	g.mux.HandleFunc("POST /v1/workflows/{id}/unpause", g.control(events.ActionUnpause))
	g.mux.HandleFunc("POST /v1/workflows/{id}/signals/{name}", g.signal)
	g.mux.HandleFunc("POST /v1/workflows/bulk", g.bulk)
	g.mux.HandleFunc("GET /v1/sessions", g.sessionList)
	g.mux.HandleFunc("GET /v1/sessions/{id}", g.session)
	g.ws.Register(g.mux)
	g.a2a.Register(g.mux)
	g.mux.Handle(routeMCP, g.mcp)
	g.routesAuth()
	g.routesTenantFeed()
	g.routesDocuments()
	g.routesCapabilities()
	g.routesDashboard()
	g.routesSchedules()
}

// Handler returns the gateway's routes, for tests and embedding.
func (g *Gateway) Handler() http.Handler { return g.traced(g.wrap(g.mux)) }

// Listen binds the listen address (port 0 picks one) and returns the bound
// address; Run serves on it.
func (g *Gateway) Listen() (net.Addr, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.listener != nil {
		return g.listener.Addr(), nil
	}
	l, err := net.Listen("tcp", g.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: listen %s: %w", g.cfg.Addr, err)
	}
	g.listener = l
	return l.Addr(), nil
}

// Run serves HTTP until ctx ends, then shuts down within 5 seconds.
func (g *Gateway) Run(ctx context.Context) error {
	if _, err := g.Listen(); err != nil {
		return err
	}
	g.mu.Lock()
	g.server = &http.Server{Handler: g.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	srv, l := g.server, g.listener
	g.mu.Unlock()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("gateway: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	// Shutdown does not wait for hijacked connections: wait for the
	// WebSocket handlers (their context has ended: they close with 1001).
	if g.ws.Shutdown(sctx) != nil {
		g.log.Warn("gateway: websocket handlers still running after shutdown timeout")
	}
	g.stop()
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("gateway: %w", err)
	}
	return nil
}

func (g *Gateway) healthz(w http.ResponseWriter, r *http.Request) {
	if !g.bus.Conn().IsConnected() {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: "not connected to NATS"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
