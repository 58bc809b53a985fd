package a2aagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/agentbus/agentbus/agents"
)

// ErrUnavailable is returned (wrapped, with the cause) by a step of an
// agent whose card or endpoint does not answer. It is not
// agents.ErrPermanent: the worker retries the step with backoff.
var ErrUnavailable = errors.New("a2aagent: remote agent unavailable")

// Remote is one remote A2A agent connected: its card, a client for its
// JSON-RPC endpoint, and an agents.Agent per skill. Safe for concurrent
// use.
type Remote struct {
	cfg      Config
	log      *slog.Logger
	http     *http.Client
	resolver *agentcard.Resolver
	skills   []*skill

	mu        sync.Mutex
	card      *a2a.AgentCard
	client    *a2aclient.Client
	fetchedAt time.Time     // the last fetch of the card, answered or not
	down      error         // why the last fetch failed; nil when it answered
	fetching  chan struct{} // closed when the fetch under way ends
	inflight  map[uint64]context.CancelCauseFunc
	next      uint64
}

// New fetches the endpoint's card and makes an agent of each skill. It
// fails when the card does not answer, lists no skill, or two skills make
// one capability.
func New(ctx context.Context, cfg Config) (*Remote, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h, err := cfg.Endpoint.headers(cfg.Getenv)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: headerTransport{base: cfg.Transport, header: h}}
	r := &Remote{cfg: cfg, log: cfg.Logger.With("component", "a2aagent", "endpoint", cfg.Endpoint.URL),
		http: hc, resolver: agentcard.NewResolver(hc), inflight: map[uint64]context.CancelCauseFunc{}}
	fctx, cancel := context.WithTimeout(ctx, cfg.CardTimeout)
	defer cancel()
	if err := r.fetch(fctx); err != nil {
		return nil, err
	}
	if err := r.makeSkills(); err != nil {
		return nil, err
	}
	return r, nil
}

// makeSkills makes an agent of each skill on the card.
func (r *Remote) makeSkills() error {
	card := r.card
	if len(card.Skills) == 0 {
		return fmt.Errorf("a2aagent: %s: the card of %q lists no skill", r.cfg.Endpoint.URL, card.Name)
	}
	byCap := map[string]string{}
	for _, s := range card.Skills {
		c, err := Capability(r.cfg.Endpoint.Prefix, s.ID)
		if err != nil {
			return fmt.Errorf("a2aagent: %s: %w", r.cfg.Endpoint.URL, err)
		}
		if other, dup := byCap[c]; dup {
			return fmt.Errorf("%w: %s: skills %q and %q both make capability %q", ErrCollision, r.cfg.Endpoint.URL, other, s.ID, c)
		}
		byCap[c] = s.ID
		r.skills = append(r.skills, &skill{r: r, capability: c, skill: s, agentName: card.Name, version: card.Version})
	}
	return nil
}

// Name is the remote agent's name on its card when it was connected.
func (r *Remote) Name() string { return r.skills[0].agentName }

// Endpoint is what r was configured with.
func (r *Remote) Endpoint() Endpoint { return r.cfg.Endpoint }

// Agents are the agents serving r's skills, one per skill, in the card's
// order.
func (r *Remote) Agents() []agents.Agent {
	out := make([]agents.Agent, len(r.skills))
	for i, s := range r.skills {
		out[i] = s
	}
	return out
}

// Capabilities are the capabilities r's skills are served as.
func (r *Remote) Capabilities() []string {
	out := make([]string, len(r.skills))
	for i, s := range r.skills {
		out[i] = s.capability
	}
	return out
}

// Close releases r's idle connections. Safe to call twice.
func (r *Remote) Close() {
	r.http.CloseIdleConnections()
}

// fetch asks for the card and records the answer: a new card and client,
// or why the agent is down (stopping the calls in flight with it).
func (r *Remote) fetch(ctx context.Context) error {
	base, path := r.cfg.Endpoint.cardLocation()
	card, err := r.resolver.Resolve(ctx, base, agentcard.WithPath(path))
	var client *a2aclient.Client
	if err == nil {
		client, err = r.connect(ctx, card)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fetchedAt = time.Now()
	if err != nil {
		err = fmt.Errorf("%w: the card at %s%s did not answer: %w", ErrUnavailable, base, path, err)
		if r.down == nil && r.card != nil {
			r.log.Warn("remote A2A agent down", "err", err)
			for _, cancel := range r.inflight {
				cancel(err)
			}
		}
		r.down = err
		return err
	}
	if r.down != nil && r.card != nil {
		r.log.Info("remote A2A agent answers again", "agent", card.Name)
	}
	r.noteSkillChanges(card)
	r.card, r.client, r.down = card, client, nil
	return nil
}

// connect makes a JSON-RPC client for card (the only transport whose
// requests carry the endpoint's headers).
func (r *Remote) connect(ctx context.Context, card *a2a.AgentCard) (*a2aclient.Client, error) {
	c := *card
	if c.URL == "" {
		c.URL, _ = r.cfg.Endpoint.cardLocation()
	}
	if c.PreferredTransport == "" {
		c.PreferredTransport = a2a.TransportProtocolJSONRPC
	}
	client, err := a2aclient.NewFromCard(ctx, &c, a2aclient.WithDefaultsDisabled(),
		a2aclient.WithJSONRPCTransport(r.http), a2aclient.WithConfig(a2aclient.Config{Polling: true}))
	if err != nil {
		return nil, fmt.Errorf("agent %q offers no JSON-RPC interface: %w", card.Name, err)
	}
	return client, nil
}

// noteSkillChanges logs skills a refreshed card added or dropped: the
// capabilities a worker serves are fixed when it starts. r.mu is held.
func (r *Remote) noteSkillChanges(card *a2a.AgentCard) {
	if r.card == nil {
		return
	}
	ids := func(c *a2a.AgentCard) []string {
		var out []string
		for _, s := range c.Skills {
			out = append(out, s.ID)
		}
		return out
	}
	before, after := ids(r.card), ids(card)
	for _, id := range after {
		if !slices.Contains(before, id) {
			r.log.Warn("remote A2A agent has a new skill; restart the worker to serve it", "skill", id)
		}
	}
	for _, id := range before {
		if !slices.Contains(after, id) {
			r.log.Warn("remote A2A agent dropped a skill; its steps now fail", "skill", id)
		}
	}
}

// check fetches the card if it is due (Refresh after an answer, a second
// after a failure; one fetch at a time) and reports whether the agent is
// up.
func (r *Remote) check(ctx context.Context) error {
	r.mu.Lock()
	since := time.Since(r.fetchedAt)
	if r.down == nil && since < r.cfg.Refresh || r.down != nil && since < min(r.cfg.Refresh, time.Second) {
		err := r.down
		r.mu.Unlock()
		return err
	}
	if wait := r.fetching; wait != nil {
		r.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.down
	}
	done := make(chan struct{})
	r.fetching = done
	r.mu.Unlock()
	err := r.fetch(ctx)
	r.mu.Lock()
	r.fetching = nil
	close(done)
	r.mu.Unlock()
	return err
}

// stale makes the next check fetch the card (a call failed to connect).
func (r *Remote) stale() {
	r.mu.Lock()
	r.fetchedAt = time.Time{}
	r.mu.Unlock()
}

// current is the latest card and client.
func (r *Remote) current() (*a2a.AgentCard, *a2aclient.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.card, r.client
}

// track derives a call's context, which a failing card fetch ends with
// ErrUnavailable; call release when the call is over.
func (r *Remote) track(ctx context.Context) (context.Context, func()) {
	cctx, cancel := context.WithCancelCause(ctx)
	r.mu.Lock()
	r.next++
	id := r.next
	r.inflight[id] = cancel
	r.mu.Unlock()
	return cctx, func() {
		r.mu.Lock()
		delete(r.inflight, id)
		r.mu.Unlock()
		cancel(nil)
	}
}

// headerTransport adds an endpoint's headers to every request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.header) == 0 {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range t.header {
		req.Header[k] = v
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections closes the base transport's idle connections.
func (t headerTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
