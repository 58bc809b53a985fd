package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
	engine "github.com/agentbus/agentbus/workflow"
)

// SourceClient is the CloudEvent source of what a NATS client publishes.
const SourceClient = "/agentbus/client"

// ErrNoHTTP: Do needs a gateway, and a NATS client has none.
var ErrNoHTTP = errors.New("client: no gateway: this client talks to NATS")

// NATSConfig says which tenant (and user) a NATS client acts for.
type NATSConfig struct {
	// Tenant is whose subjects the client uses; default "default".
	Tenant string
	// User, when set, is carried by every submission (memory and
	// sessions are then the user's).
	User string
}

// The bus publishes submissions as it is (api.Submit), and its
// idempotency bucket records keys (api.SubmitOnce).
var (
	_ api.Publisher[bus.Published] = (*bus.Bus)(nil)
	_ api.Claims                   = (*bus.KV)(nil)
)

// natsClient is the client's side of NATS: the bus, the tenant, and the
// buckets and registry it reads, opened on first use.
type natsClient struct {
	b      *bus.Bus
	tenant string
	user   string

	regMu sync.Mutex
	reg   *discovery.Registry

	idemMu sync.Mutex
	idem   *bus.KV
}

// NewNATS makes a Client that talks to NATS straight — no gateway — over
// an open connection: Submit publishes on the tenant's submit subject,
// Follow reads the workflow's events from JetStream, State and
// Checkpoints read KV AGENTBUS_CHECKPOINTS, the control actions are
// requests on the workflow's control subject, and Agents and Discover
// read the registry. What the gateway would check, it checks itself
// (the submission's schema, a taken workflow id). The tenant is trusted:
// NATS permissions, not this client, keep tenants apart. Do is
// ErrNoHTTP; Follow never sees a reset (a cursor behind the retained
// events goes on with the oldest one kept).
func NewNATS(b *bus.Bus, cfg NATSConfig) (*Client, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: no bus", ErrConfig)
	}
	tenant := cmp.Or(cfg.Tenant, api.DefaultTenant)
	if err := subjects.ValidTenant(tenant); err != nil {
		return nil, fmt.Errorf("%w: tenant: %w", ErrConfig, err)
	}
	if cfg.User != "" {
		if err := subjects.ValidUser(cfg.User); err != nil {
			return nil, fmt.Errorf("%w: user: %w", ErrConfig, err)
		}
	}
	return &Client{cfg: Config{Tenant: tenant, User: cfg.User}, nc: &natsClient{b: b, tenant: tenant, user: cfg.User}}, nil
}

func (n *natsClient) submit(ctx context.Context, s Submission, fork *events.ForkOf, key string) (Submitted, error) {
	if fork == nil {
		body, err := json.Marshal(s)
		if err != nil {
			return Submitted{}, fmt.Errorf("client: %w", err)
		}
		if err := schemas.Validate(schemas.WorkflowRequest, body); err != nil {
			return Submitted{}, invalid(err)
		}
	}
	sub := s.Submitted()
	sub.User, sub.Fork = n.user, fork
	o := api.Once{Key: key, Exists: func(ctx context.Context, workflow string) (bool, error) {
		_, err := n.checkpoint(ctx, workflow)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}}
	if key != "" {
		c, err := n.claims(ctx)
		if err != nil {
			return Submitted{}, fmt.Errorf("client: %w", err)
		}
		o.Claims = c
	}
	out, err := api.SubmitOnce(ctx, n.b, o, SourceClient, n.tenant, s.WorkflowID, sub)
	var reused *api.KeyReusedError
	switch {
	case errors.Is(err, api.ErrWorkflowExists):
		return Submitted{}, &APIError{StatusCode: http.StatusConflict, Status: "409 Conflict", Code: "exists",
			Message: fmt.Sprintf("workflow %q already exists", s.WorkflowID)}
	case errors.As(err, &reused):
		return Submitted{}, &APIError{StatusCode: http.StatusConflict, Status: "409 Conflict", Code: "idempotency_key_reused",
			Message: fmt.Sprintf("idempotency key %q was already used for a different request (workflow %s): send that same request again to get its workflow, or use a new key",
				reused.Key, reused.Workflow),
			Problems: []api.Problem{{In: api.InHeader, Name: api.IdempotencyHeader, Message: fmt.Sprintf("%q was sent with another request within the last 24 hours, which started workflow %s",
				reused.Key, reused.Workflow)}}}
	case err != nil:
		return Submitted{}, fmt.Errorf("client: submit: %w", err)
	}
	return out, nil
}

// claims opens the idempotency bucket (creating it if need be) on the
// first submission with a key, and keeps it.
func (n *natsClient) claims(ctx context.Context) (*bus.KV, error) {
	n.idemMu.Lock()
	defer n.idemMu.Unlock()
	if n.idem == nil {
		kv, err := n.b.Idempotency(ctx)
		if err != nil {
			return nil, err
		}
		n.idem = kv
	}
	return n.idem, nil
}

// invalid turns a schema refusal into the *APIError the gateway would
// answer: 400 with each problem's pointer.
func invalid(err error) error {
	var ve *schemas.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("client: %w", err)
	}
	e := &APIError{StatusCode: http.StatusBadRequest, Status: "400 Bad Request", Code: "invalid_request", Message: "invalid request body"}
	e.Problems = api.BodyProblems(ve.Problems)
	return e
}

func (n *natsClient) follow(ctx context.Context, workflow string, from uint64) iter.Seq2[Frame, error] {
	return func(yield func(Frame, error) bool) {
		epoch, err := n.b.Epoch(ctx)
		if err != nil {
			yield(Frame{}, fmt.Errorf("client: %w", err))
			return
		}
		if err := n.await(ctx, workflow); err != nil {
			yield(Frame{}, err)
			return
		}
		stopped := false
		err = n.b.Follow(ctx, n.tenant, workflow, from, func(_ context.Context, r bus.Record) error {
			f := events.NewFrame(r.Envelope, r.Offset, epoch)
			if !yield(f, nil) {
				stopped = true
				return bus.ErrStop
			}
			if f.Terminal() {
				return bus.ErrStop
			}
			return nil
		})
		if err != nil && !stopped {
			yield(Frame{}, fmt.Errorf("client: following %s: %w", workflow, err))
		}
	}
}

// await waits, for at most awaitGrace, until an orchestrator has
// recorded the workflow: a just-submitted one has no checkpoint yet.
func (n *natsClient) await(ctx context.Context, workflow string) error {
	_, err := n.checkpoint(ctx, workflow)
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	key, _ := subjects.CheckpointKey(n.tenant, workflow)
	kv, kerr := n.b.KV(ctx, subjects.BucketCheckpoints)
	if kerr != nil {
		return fmt.Errorf("client: %w", kerr)
	}
	wctx, cancel := context.WithTimeout(ctx, awaitGrace)
	defer cancel()
	if _, werr := kv.Wait(wctx, key); werr != nil {
		return err
	}
	return nil
}

// awaitGrace is how long Follow on NATS waits for a workflow to exist.
const awaitGrace = 10 * time.Second

func (n *natsClient) checkpoint(ctx context.Context, workflow string) (bus.Entry, error) {
	key, err := subjects.CheckpointKey(n.tenant, workflow)
	if err != nil {
		return bus.Entry{}, &APIError{StatusCode: http.StatusBadRequest, Status: "400 Bad Request", Message: err.Error()}
	}
	kv, err := n.b.KV(ctx, subjects.BucketCheckpoints)
	if err != nil {
		return bus.Entry{}, fmt.Errorf("client: %w", err)
	}
	e, err := kv.GetFresh(ctx, key)
	if errors.Is(err, bus.ErrNotFound) {
		return e, &APIError{StatusCode: http.StatusNotFound, Status: "404 Not Found", Code: "not_found",
			Message: fmt.Sprintf("no workflow %q for tenant %s", workflow, n.tenant)}
	}
	return e, err
}

func (n *natsClient) state(ctx context.Context, workflow string) (State, error) {
	var s State
	e, err := n.checkpoint(ctx, workflow)
	if err != nil {
		return s, err
	}
	if err := engine.UnmarshalCheckpoint(e.Value, &s); err != nil {
		return s, fmt.Errorf("client: checkpoint of %s: %w", workflow, err)
	}
	s.Outbox = nil
	return s, nil
}

func (n *natsClient) checkpoints(ctx context.Context, wf string) ([]Revision, error) {
	if _, err := n.checkpoint(ctx, wf); err != nil {
		return nil, err
	}
	key, _ := subjects.CheckpointKey(n.tenant, wf)
	kv, err := n.b.KV(ctx, subjects.BucketCheckpoints)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	hist, err := kv.History(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	out := make([]Revision, 0, len(hist))
	for i, e := range hist {
		var s State
		if engine.UnmarshalCheckpoint(e.Value, &s) != nil {
			continue
		}
		s.Outbox = nil
		status := engine.RevisionStatus(i == len(hist)-1, s.Status)
		b, _ := json.Marshal(s)
		out = append(out, Revision{Revision: e.Revision, Status: status, Checkpoint: b})
	}
	return out, nil
}

func (n *natsClient) control(ctx context.Context, workflow string, c events.Control) (ControlResult, error) {
	var res ControlResult
	if _, err := n.checkpoint(ctx, workflow); err != nil {
		return res, err
	}
	subj, err := subjects.Control(n.tenant, workflow)
	if err != nil {
		return res, err
	}
	env, err := events.New(events.TypeControl, uuid.NewString(), SourceClient, n.tenant, workflow, c.StepID, c)
	if err != nil {
		return res, fmt.Errorf("client: %w", err)
	}
	out, err := n.b.Request(ctx, subj, env)
	if err != nil {
		return res, fmt.Errorf("client: no orchestrator answered: %w", err)
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(out, &e) == nil && e.Error != "" {
		return res, &APIError{StatusCode: http.StatusBadGateway, Status: "502 Bad Gateway", Code: "control_failed", Message: e.Error}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, fmt.Errorf("client: bad answer from the orchestrator: %w", err)
	}
	if !res.Applied {
		return res, &APIError{StatusCode: http.StatusConflict, Status: "409 Conflict", Code: "not_applied", Message: res.Message}
	}
	return res, nil
}

// registry opens the discovery registry on first use and keeps it (its
// index follows the bucket with a KV watch: building it per call would
// list the bucket every time); Client.Close closes it.
func (n *natsClient) registry(ctx context.Context) (*discovery.Registry, error) {
	n.regMu.Lock()
	defer n.regMu.Unlock()
	if n.reg == nil {
		r, err := discovery.New(ctx, n.b, nil)
		if err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		n.reg = r
	}
	return n.reg, nil
}
