package a2a

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway/internal/fanout"
	"github.com/agentbus/agentbus/schemas"
)

// Gateway is what the A2A server asks of the HTTP gateway that mounts it:
// who a request is and what it may do and see, the gateway's bodies and
// answers, and its way of storing a submission. A method given the
// ResponseWriter that reports false has answered the request itself.
type Gateway interface {
	// Tenant authenticates r and returns the tenant it acts for.
	Tenant(w http.ResponseWriter, r *http.Request) (string, bool)
	// MayControl reports whether r may change things (not a viewer).
	MayControl(r *http.Request) bool
	// ReadBody reads r's body within the gateway's size limit.
	ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, bool)
	// User is the user the request of ctx acts for ("" for none): a
	// submission runs for them.
	User(ctx context.Context) string
	// Sees reports whether the request of ctx sees the workflow whose
	// checkpoint is cp; SeesAll whether it sees every workflow of its
	// tenant (then a checkpoint that cannot be read is an error, not
	// someone else's).
	Sees(ctx context.Context, cp map[string]json.RawMessage) bool
	SeesAll(ctx context.Context) bool
	// Submit stores a new task's submission as every front door does
	// (api.SubmitOnce): within the gateway's store timeout and traced,
	// with the tenant's quotas and, if key is not "", its idempotency key;
	// workflow "" has an id picked. Its errors are SubmitOnce's
	// (api.ErrWorkflowExists, *api.KeyReusedError, *api.QuotaError,
	// *api.StoreError).
	Submit(ctx context.Context, tenant, key, workflow string, sub events.WorkflowSubmitted) (api.SubmitResponse, error)
	// WriteError answers in the gateway's error shape {"error": {code,
	// message, problems}}, each problem at its pointer into the body.
	WriteError(w http.ResponseWriter, status int, code, message string, probs []schemas.Problem)
	// WriteJSON answers status with v as the gateway writes JSON.
	WriteJSON(w http.ResponseWriter, status int, v any)
	// Upload stores files and starts the workflow that indexes them in
	// the tenant's index, as POST /v1/documents does, with meta added to
	// every chunk; it returns that workflow's id. A file it refuses is a
	// *FileError; quota errors are SubmitOnce's.
	Upload(ctx context.Context, tenant string, files []File, meta map[string]any) (string, error)
	// SeedSession gives the session id (of the request's user) the
	// turns when it has none yet, and reports whether it did.
	SeedSession(ctx context.Context, tenant, id string, turns []events.Turn) (bool, error)
}

// File is a file of an A2A message, to be indexed.
type File struct {
	// Name is the file's name, its document id in the index.
	Name string
	Data []byte
}

// FileError is Gateway.Upload refusing one of the files.
type FileError struct {
	// Index is the file's position among those given.
	Index  int
	Reason string
}

func (e *FileError) Error() string { return "a2a: file " + strconv.Itoa(e.Index) + ": " + e.Reason }

// Bus is the part of the bus the A2A server uses: a task's events and its
// control subject. *bus.Bus implements it.
type Bus interface {
	Epoch(ctx context.Context) (string, error)
	LastOffset(ctx context.Context, tenant, workflow string) (uint64, error)
	Request(ctx context.Context, subject string, env events.Envelope) ([]byte, error)
}

// Checkpoints reads workflows' checkpoints: *bus.KV on the checkpoints
// bucket.
type Checkpoints interface {
	Get(ctx context.Context, key string) (bus.Entry, error)
	// GetFresh reads through the bucket's leader (bus.KV.GetFresh): a
	// task's state is never older than what its client saw.
	GetFresh(ctx context.Context, key string) (bus.Entry, error)
	// Wait waits for the key to exist.
	Wait(ctx context.Context, key string) (bus.Entry, error)
}

// Registry lists the registered agents: *discovery.Registry.
type Registry interface {
	List(ctx context.Context) ([]discovery.Instance, error)
}

var (
	_ Bus         = (*bus.Bus)(nil)
	_ Checkpoints = (*bus.KV)(nil)
	_ Registry    = (*discovery.Registry)(nil)
)

// Deps is what a Server takes from the gateway that mounts it. Every field
// is required; the limits are the gateway's own, shared by every surface.
type Deps struct {
	Gateway     Gateway
	Bus         Bus
	Checkpoints Checkpoints
	Registry    Registry
	// Hubs are the gateway's fan-out: an A2A stream reads a task's events
	// as its WebSocket and SSE streams do.
	Hubs   *fanout.Hubs
	Logger *slog.Logger
	// AuthFailures counts refused requests by reason (a viewer's write is
	// "forbidden"); AuthOn says the gateway checks tokens, which the agent
	// card then names.
	AuthFailures *prometheus.CounterVec
	AuthOn       bool
	// MaxBodyBytes bounds a JSON-RPC request; AcceptTimeout bounds the
	// wait for an orchestrator to record a new task; KeepAlive is the
	// interval of SSE keepalive comments; SendQueueBytes bounds a stream's
	// frames not yet written (the gateway's, for every stream).
	MaxBodyBytes  int64
	AcceptTimeout time.Duration
	// MaxUploadBytes bounds the files of one message (the gateway's
	// bound on POST /v1/documents).
	MaxUploadBytes int64
	KeepAlive      time.Duration
	SendQueueBytes int
}

// Server serves the A2A surface. It is safe for concurrent use.
type Server struct {
	cfg            Config
	gw             Gateway
	bus            Bus
	checkpoints    Checkpoints
	registry       Registry
	hubs           *fanout.Hubs
	log            *slog.Logger
	authFailures   *prometheus.CounterVec
	authOn         bool
	maxBodyBytes   int64
	maxUploadBytes int64
	acceptTimeout  time.Duration
	keepAlive      time.Duration
	sendQueueBytes int
}

// New returns a Server; cfg must have its defaults set and be valid.
func New(cfg Config, d Deps) *Server {
	return &Server{cfg: cfg, gw: d.Gateway, bus: d.Bus, checkpoints: d.Checkpoints, registry: d.Registry, hubs: d.Hubs,
		log: d.Logger, authFailures: d.AuthFailures, authOn: d.AuthOn, maxBodyBytes: d.MaxBodyBytes, maxUploadBytes: d.MaxUploadBytes,
		acceptTimeout: d.AcceptTimeout, keepAlive: d.KeepAlive, sendQueueBytes: d.SendQueueBytes}
}

// Register adds the A2A routes to mux.
func (g *Server) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /.well-known/agent-card.json", g.agentCard)
	mux.HandleFunc("GET /.well-known/agent.json", g.agentCard) // its name before A2A 0.3, which the seeds use
	mux.HandleFunc("POST /a2a", g.a2aRPC)
	mux.HandleFunc("POST /tasks/send", g.tasksSend)
}

// newWorkflowID returns a time-ordered UUID (v7), a valid workflow token,
// as the gateway's own ids are.
func newWorkflowID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
