package gateway

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
)

// GET /v1/capabilities: how busy each capability is for the request's
// tenant — its workers, and the tenant's steps waiting for admission
// (flow control), waiting for or held by a worker, and held back by the
// tenant's limits. GET /v1/agents lists instances from the registry;
// this is per capability and per tenant, from JetStream's counts.

// CapabilitiesResponse answers GET /v1/capabilities: every capability the
// tenant can see — one a registered agent offers, or one the tenant has
// steps of — sorted by name. AsOf is when the counts were read: answers
// within flowTTL of one another share one reading.
type CapabilitiesResponse struct {
	TenantID     string       `json:"tenant_id"`
	AsOf         time.Time    `json:"as_of"`
	Capabilities []Capability `json:"capabilities"`
}

// Capability is one capability's workers and the request's tenant's steps
// of it. Workers are shared by every tenant; the steps are the tenant's
// own (all of its users').
type Capability struct {
	Capability string `json:"capability"`
	// Instances counts the registered agent instances that offer it,
	// Healthy those healthy.
	Instances int `json:"instances"`
	Healthy   int `json:"healthy"`
	// Slots is how many steps its workers take at once: as its step
	// consumer tells (running plus idle pull requests), or as its healthy
	// instances say (discovery.Registration.Slots, once per process) if
	// that is more — a slot running a step handed to it with a verdict
	// (eager dispatch) holds no delivery and no pull request, so the
	// consumer does not see it. Idle is how many wait for work. Both 0
	// while no worker has bound to it and none says.
	Slots int `json:"slots"`
	Idle  int `json:"idle"`
	TenantSteps
	// Tenants, with ?all_tenants=true (admin), is every tenant that has
	// steps of it queued or in flight.
	Tenants []TenantSteps `json:"tenants,omitempty"`
}

// TenantSteps is one tenant's steps of a capability.
type TenantSteps struct {
	// TenantID is set in Capability.Tenants only.
	TenantID string `json:"tenant_id,omitempty"`
	// Queued counts the steps waiting for admission in the tenant's queue
	// of the capability (flow control), QueuedByPriority by priority
	// ("1"–"5"; absent when none waits).
	Queued           uint64            `json:"queued"`
	QueuedByPriority map[string]uint64 `json:"queued_by_priority,omitempty"`
	// InFlight counts the tenant's step requests on the capability's step
	// subject: admitted (or never queued), waiting for a worker or running.
	InFlight uint64 `json:"in_flight"`
	// OldestQueuedMS is how long the oldest queued step has waited,
	// absent when none waits.
	OldestQueuedMS *int64 `json:"oldest_queued_ms,omitempty"`
	// Throttled is true when steps of the tenant wait while a worker is
	// idle: they are held back by the tenant's own limit (--max-in-flight,
	// --rate-limit), not by the capability's load.
	Throttled bool `json:"throttled"`
}

// flowTTL is how long one reading of the counts answers requests: a page
// that refreshes every 2 s, or many of them, costs JetStream at most one
// reading a second per gateway.
const flowTTL = time.Second

// flowReadTimeout bounds one reading, which requests wait for.
const flowReadTimeout = 5 * time.Second

func (g *Gateway) routesCapabilities() {
	g.mux.HandleFunc("GET /v1/capabilities", g.capabilities)
}

func (g *Gateway) capabilities(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	all := false
	if v := r.URL.Query().Get("all_tenants"); r.URL.Query().Has("all_tenants") {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeBadRequest(w, queryProblem("all_tenants", "%s: want true or false", quoted(v)))
			return
		}
		all = b
	}
	if all && !g.operator(r) {
		writeError(w, http.StatusForbidden, apiError{Code: "forbidden", Message: "all_tenants needs an admin token: other tenants' counts are theirs",
			Problems: []Problem{queryProblem("all_tenants", "needs an admin token")}})
		return
	}
	s, err := g.flow.get(r.Context(), g.readFlow)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return
	}
	out, err := s.answer(r.Context(), g.bus, tenant, all)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// operator reports whether the request may see every tenant: an admin
// token, or any request with auth off (where anyone may act for any
// tenant already).
func (g *Gateway) operator(r *http.Request) bool {
	if p, ok := r.Context().Value(principalKey{}).(principal); ok {
		return p.role == RoleAdmin
	}
	return !g.cfg.Auth.mw.on()
}

// flowCache keeps the last reading for flowTTL. The zero value is ready;
// it is safe for concurrent use.
type flowCache struct {
	mu   sync.Mutex
	snap *flowSnapshot
}

// get returns a reading at most flowTTL old, making one with read if
// needed. Requests that arrive while one is made wait for it rather than
// each making their own.
func (c *flowCache) get(ctx context.Context, read func(context.Context) (*flowSnapshot, error)) (*flowSnapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != nil && time.Since(c.snap.at) < flowTTL {
		return c.snap, nil
	}
	ctx, cancel := context.WithTimeout(ctx, flowReadTimeout)
	defer cancel()
	s, err := read(ctx)
	if err != nil {
		return nil, err
	}
	c.snap = s
	return s, nil
}

// tenantCap keys counts by tenant and capability.
type tenantCap struct{ tenant, capability string }

// workers is a capability's registered instances, those healthy, and the
// slots those say they have (once per process, by host and pid).
type workers struct {
	instances, healthy, slots int
	processes                 map[string]bool
}

// flowSnapshot is one reading of the registry and of JetStream's counts,
// for every tenant. Only its oldest times are filled in later, per tenant
// and under mu, when a request needs them.
type flowSnapshot struct {
	at      time.Time
	workers map[string]workers
	// loads holds the capabilities whose step consumer exists.
	loads  map[string]bus.Load
	queued map[tenantCap]*[6]uint64
	stored map[tenantCap]uint64

	mu     sync.Mutex
	oldest map[tenantCap]time.Time
	looked map[string]bool // tenants whose oldest times were read
}

// readFlow reads the registry, the queue and step counts of every tenant
// (two stream look-ups) and the step consumer of every capability any of
// them names (one look-up each).
func (g *Gateway) readFlow(ctx context.Context) (*flowSnapshot, error) {
	s := &flowSnapshot{at: time.Now(), workers: map[string]workers{}, loads: map[string]bus.Load{},
		queued: map[tenantCap]*[6]uint64{}, stored: map[tenantCap]uint64{}, oldest: map[tenantCap]time.Time{}, looked: map[string]bool{}}
	list, err := g.registry.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, in := range list {
		for _, c := range in.Capabilities {
			w := s.workers[c]
			w.instances++
			if in.Health == discovery.Healthy {
				w.healthy++
				if proc := in.Host + "/" + strconv.Itoa(in.PID); in.Slots > 0 && !w.processes[proc] {
					if w.processes == nil {
						w.processes = map[string]bool{}
					}
					w.processes[proc] = true
					w.slots += in.Slots
				}
			}
			s.workers[c] = w
		}
	}
	f, err := g.bus.ReadFlow(ctx)
	if err != nil {
		return nil, err
	}
	caps := map[string]bool{}
	for c := range s.workers {
		caps[c] = true
	}
	for _, q := range f.Queued {
		k := tenantCap{q.Tenant, q.Capability}
		if s.queued[k] == nil {
			s.queued[k] = &[6]uint64{}
		}
		s.queued[k][q.Priority] += q.Count
		caps[q.Capability] = true
	}
	for _, st := range f.Stored {
		s.stored[tenantCap{st.Tenant, st.Capability}] += st.Count
		caps[st.Capability] = true
	}
	for c := range caps {
		l, err := g.bus.CapabilityLoad(ctx, c)
		switch {
		case err == nil:
			s.loads[c] = l
		case !errors.Is(err, bus.ErrNotFound): // not found: no worker has bound to it
			return nil, err
		}
	}
	s.at = time.Now()
	return s, nil
}

// answer is the reading as tenant sees it; all adds every tenant's steps.
func (s *flowSnapshot) answer(ctx context.Context, b *bus.Bus, tenant string, all bool) (CapabilitiesResponse, error) {
	caps := map[string]bool{}
	for c := range s.workers {
		caps[c] = true
	}
	tenants := map[string]bool{tenant: true}
	for k := range s.keys() {
		if all || k.tenant == tenant {
			caps[k.capability] = true
			tenants[k.tenant] = true
		}
	}
	if err := s.lookOldest(ctx, b, tenants); err != nil {
		return CapabilitiesResponse{}, err
	}
	now := time.Now()
	out := CapabilitiesResponse{TenantID: tenant, AsOf: s.at.UTC(), Capabilities: make([]Capability, 0, len(caps))}
	for _, c := range slices.Sorted(maps.Keys(caps)) {
		l := s.loads[c]
		row := Capability{Capability: c, Instances: s.workers[c].instances, Healthy: s.workers[c].healthy,
			Slots: max(l.Slots(), s.workers[c].slots), Idle: l.Idle, TenantSteps: s.steps(tenant, c, now)}
		if all {
			for _, t := range slices.Sorted(maps.Keys(tenants)) {
				if ts := s.steps(t, c, now); ts.Queued > 0 || ts.InFlight > 0 {
					ts.TenantID = t
					row.Tenants = append(row.Tenants, ts)
				}
			}
		}
		out.Capabilities = append(out.Capabilities, row)
	}
	return out, nil
}

// keys is every tenant and capability with steps queued or in flight.
func (s *flowSnapshot) keys() map[tenantCap]bool {
	out := make(map[tenantCap]bool, len(s.queued)+len(s.stored))
	for k := range s.queued {
		out[k] = true
	}
	for k := range s.stored {
		out[k] = true
	}
	return out
}

// lookOldest reads, once per reading, when each of tenants' oldest queued
// step of each capability was queued: one get per queue that holds steps.
func (s *flowSnapshot) lookOldest(ctx context.Context, b *bus.Bus, tenants map[string]bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := range tenants {
		if s.looked[t] {
			continue
		}
		var caps []string
		for k := range s.queued {
			if k.tenant == t {
				caps = append(caps, k.capability)
			}
		}
		got, err := b.OldestQueued(ctx, t, caps)
		if err != nil {
			return err
		}
		for c, at := range got {
			s.oldest[tenantCap{t, c}] = at
		}
		s.looked[t] = true
	}
	return nil
}

// steps is a tenant's steps of a capability in the reading, with the
// oldest queued step's wait up to now.
func (s *flowSnapshot) steps(tenant, capability string, now time.Time) TenantSteps {
	k := tenantCap{tenant, capability}
	ts := TenantSteps{InFlight: s.stored[k]}
	if q := s.queued[k]; q != nil {
		for p, n := range q {
			if n == 0 {
				continue
			}
			if ts.QueuedByPriority == nil {
				ts.QueuedByPriority = map[string]uint64{}
			}
			ts.QueuedByPriority[strconv.Itoa(p)] = n
			ts.Queued += n
		}
	}
	s.mu.Lock()
	at, ok := s.oldest[k]
	s.mu.Unlock()
	if ok && ts.Queued > 0 {
		ms := max(0, now.Sub(at).Milliseconds())
		ts.OldestQueuedMS = &ms
	}
	ts.Throttled = ts.Queued > 0 && s.loads[capability].Idle > 0
	return ts
}
