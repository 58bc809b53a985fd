package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbus/agentbus/workflow"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

// Quotas (#23) bound what a tenant has at once: workflows running, steps
// queued, bytes of uploads waiting to be indexed. A submission (POST
// /v1/workflows, a fork, an upload's ingest workflow, a new A2A task) is
// refused with 429 and Retry-After while the tenant is at its running or
// queued-steps quota, an upload while its bytes would pass the upload
// quota; nothing of a refused request is stored.
//
// The gateway counts from what the bus holds, never from its own memory
// alone, so that any number of gateways share a tenant's quota:
//   - running: the tenant's checkpoints (AGENTBUS_CHECKPOINTS, keys
//     "<tenant>.*") whose status is not final, plus its submissions stored
//     and not yet taken by an orchestrator (AGENTBUS_WORKFLOWS). It reads
//     every checkpoint of the tenant, as GET /v1/workflows does: the cost
//     grows with the workflows the bucket keeps.
//   - queued steps: the tenant's messages in AGENTBUS_STEPS
//     ("agentbus.<tenant>.step.*": waiting for a worker or being run) and
//     in AGENTBUS_QUEUE ("agentbus.<tenant>.queue.*.*", waiting for
//     admission) when it exists, from stream info with a subject filter.
//   - upload bytes: the sizes of the tenant's objects in AGENTBUS_UPLOADS.
//
// A count is reused for QuotaConfig.CacheTTL (1s). Within that time this
// gateway adds what it admitted itself (a workflow, an upload's bytes), so
// a burst on one gateway cannot pass a quota; a burst spread over n
// gateways may pass it by what the others admitted within the last second.

// QuotaConfig sets the tenants' quotas. The zero value sets none.
type QuotaConfig struct {
	// Default is the quota of every tenant and field Tenants does not set.
	Default Limits
	// Tenants sets quotas per tenant, field by field over Default (see
	// ParseQuotas for the file that holds them).
	Tenants map[string]TenantLimits
	// RetryAfter is the Retry-After of a 429 for a quota, rounded up to
	// whole seconds; default 5s.
	RetryAfter time.Duration
	// CacheTTL is how long a count is reused before it is read again;
	// default 1s, negative: read every time.
	CacheTTL time.Duration
}

// Limits are a tenant's quotas; 0 means no quota.
type Limits struct {
	// Running bounds the workflows not yet ended (api.QuotaRunning).
	Running int64 `json:"running"`
	// QueuedSteps bounds the steps stored and not yet done
	// (api.QuotaQueuedSteps).
	QueuedSteps int64 `json:"queued_steps"`
	// UploadBytes bounds the bytes of uploads not yet indexed
	// (api.QuotaUploadBytes).
	UploadBytes int64 `json:"upload_bytes"`
}

// TenantLimits are one tenant's quotas in QuotaConfig.Tenants: a nil field
// is QuotaConfig.Default's, 0 is no quota.
type TenantLimits struct {
	Running     *int64 `json:"running,omitempty"`
	QueuedSteps *int64 `json:"queued_steps,omitempty"`
	UploadBytes *int64 `json:"upload_bytes,omitempty"`
}

func (c *QuotaConfig) setDefaults() {
	if c.RetryAfter == 0 {
		c.RetryAfter = 5 * time.Second
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = time.Second
	}
}

// Validate reports every problem with the configuration.
func (c QuotaConfig) Validate() error {
	var errs []error
	check := func(who string, l Limits) {
		for _, f := range []struct {
			name string
			v    int64
		}{{api.QuotaRunning, l.Running}, {api.QuotaQueuedSteps, l.QueuedSteps}, {api.QuotaUploadBytes, l.UploadBytes}} {
			if f.v < 0 {
				errs = append(errs, fmt.Errorf("gateway: quota %s of %s is %d: want 0 (none) or more", f.name, who, f.v))
			}
		}
	}
	check("every tenant", c.Default)
	for _, t := range slices.Sorted(maps.Keys(c.Tenants)) {
		if err := subjects.ValidTenant(t); err != nil {
			errs = append(errs, fmt.Errorf("gateway: quotas: %w", err))
			continue
		}
		check("tenant "+t, c.Limits(t))
	}
	if c.RetryAfter < 0 {
		errs = append(errs, fmt.Errorf("gateway: quota retry-after %s is negative", c.RetryAfter))
	}
	return errors.Join(errs...)
}

// Limits returns tenant's quotas: Default, with what Tenants sets for it.
func (c QuotaConfig) Limits(tenant string) Limits {
	l := c.Default
	t, ok := c.Tenants[tenant]
	if !ok {
		return l
	}
	for _, f := range []struct {
		dst *int64
		src *int64
	}{{&l.Running, t.Running}, {&l.QueuedSteps, t.QueuedSteps}, {&l.UploadBytes, t.UploadBytes}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return l
}

// ParseQuotas decodes a quota table (--quotas FILE or AGENTBUS_QUOTAS): a
// JSON object from tenant id to {"running", "queued_steps",
// "upload_bytes"}, each optional (absent: the default; 0: none),
// validated against the schema schemas.Quotas. An invalid table is a
// *schemas.ValidationError naming the JSON pointer of every problem.
func ParseQuotas(data []byte) (map[string]TenantLimits, error) {
	if err := schemas.Validate(schemas.Quotas, data); err != nil {
		return nil, fmt.Errorf("gateway: quota table: %w", err)
	}
	var out map[string]TenantLimits
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("gateway: quota table: %w", err)
	}
	return out, nil
}

// quotas counts tenants' usage and admits or refuses requests. It is safe
// for concurrent use.
type quotas struct {
	cfg         QuotaConfig
	bus         *bus.Bus
	checkpoints *bus.KV

	mu      sync.Mutex
	tenants map[string]*usage
}

// usage is one tenant's counts as last read, plus what this gateway
// admitted since. mu serialises the tenant's admissions, so that one read
// serves a burst and each admission sees the ones before it.
type usage struct {
	mu                      sync.Mutex
	running, steps, uploads gauge
}

// gauge is one count: n as read at at, plus what was admitted since.
type gauge struct {
	n  int64
	at time.Time
}

func newQuotas(cfg QuotaConfig, b *bus.Bus, checkpoints *bus.KV) *quotas {
	return &quotas{cfg: cfg, bus: b, checkpoints: checkpoints, tenants: map[string]*usage{}}
}

func (q *quotas) usage(tenant string) *usage {
	q.mu.Lock()
	defer q.mu.Unlock()
	u, ok := q.tenants[tenant]
	if !ok {
		u = &usage{}
		q.tenants[tenant] = u
	}
	return u
}

// read returns g's count, reading it with count when it is older than
// the cache TTL. The tenant's usage lock must be held.
func (q *quotas) read(ctx context.Context, g *gauge, count func(context.Context) (int64, error)) (int64, error) {
	if !g.at.IsZero() && time.Since(g.at) < q.cfg.CacheTTL {
		return g.n, nil
	}
	n, err := count(ctx)
	if err != nil {
		return 0, err
	}
	g.n, g.at = n, time.Now()
	return n, nil
}

// refuse is the error of a request over quota.
func (q *quotas) refuse(tenant string, quota api.Quota) error {
	return &api.QuotaError{Tenant: tenant, Quota: quota, RetryAfter: q.cfg.RetryAfter}
}

// admit decides whether tenant may start a workflow: refused
// (*api.QuotaError) at its queued-steps or running quota; else the
// workflow is counted as running until the next read, and undo takes it
// back (the submission was not stored after all). A count that cannot be
// read is an error: the request is not admitted blind.
func (q *quotas) admit(ctx context.Context, tenant string) (func(), error) {
	l := q.cfg.Limits(tenant)
	if l.Running == 0 && l.QueuedSteps == 0 {
		return nil, nil
	}
	u := q.usage(tenant)
	u.mu.Lock()
	defer u.mu.Unlock()
	if l.QueuedSteps > 0 {
		n, err := q.read(ctx, &u.steps, func(ctx context.Context) (int64, error) { return q.queuedSteps(ctx, tenant) })
		if err != nil {
			return nil, err
		}
		if n >= l.QueuedSteps {
			return nil, q.refuse(tenant, api.Quota{Name: api.QuotaQueuedSteps, Limit: l.QueuedSteps, Current: n})
		}
	}
	if l.Running == 0 {
		return nil, nil
	}
	n, err := q.read(ctx, &u.running, func(ctx context.Context) (int64, error) { return q.running(ctx, tenant) })
	if err != nil {
		return nil, err
	}
	if n >= l.Running {
		return nil, q.refuse(tenant, api.Quota{Name: api.QuotaRunning, Limit: l.Running, Current: n})
	}
	u.running.n++
	return q.undo(u, &u.running, 1), nil
}

// undo returns a function that takes d back from g, unless g was read
// again since (the new count does not hold it).
func (q *quotas) undo(u *usage, g *gauge, d int64) func() {
	at := g.at
	return func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		if g.at.Equal(at) {
			g.n -= d
		}
	}
}

// uploadStart is the tenant's upload bytes before an upload is stored,
// for admitUpload; limit 0 means no quota.
type uploadStart struct {
	limit, before int64
}

// startUpload refuses an upload while tenant is at its upload quota
// (requested is the body's length if known, else 0), and otherwise
// returns the count before the upload, which admitUpload checks the
// stored size against.
func (q *quotas) startUpload(ctx context.Context, tenant string, requested int64) (uploadStart, error) {
	l := q.cfg.Limits(tenant)
	if l.UploadBytes == 0 {
		return uploadStart{}, nil
	}
	u := q.usage(tenant)
	u.mu.Lock()
	defer u.mu.Unlock()
	n, err := q.read(ctx, &u.uploads, func(ctx context.Context) (int64, error) { return q.bus.UploadBytes(ctx, tenant) })
	if err != nil {
		return uploadStart{}, err
	}
	if n >= l.UploadBytes {
		return uploadStart{}, q.refuse(tenant, api.Quota{Name: api.QuotaUploadBytes, Limit: l.UploadBytes, Current: n, Requested: max(requested, 0)})
	}
	return uploadStart{limit: l.UploadBytes, before: n}, nil
}

// admitUpload refuses an upload of size bytes that would take tenant past
// its upload quota; else its bytes count until the next read, and undo
// takes them back (its workflow was not stored after all). Two uploads of
// one tenant stored at the same time are each checked against the count
// before both, so together they may pass the quota.
func (q *quotas) admitUpload(tenant string, st uploadStart, size int64) (func(), error) {
	if st.limit == 0 {
		return func() {}, nil
	}
	if st.before+size > st.limit {
		return nil, q.refuse(tenant, api.Quota{Name: api.QuotaUploadBytes, Limit: st.limit, Current: st.before, Requested: size})
	}
	u := q.usage(tenant)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.uploads.n += size
	return q.undo(u, &u.uploads, size), nil
}

// running counts tenant's workflows not yet ended: checkpoints whose
// status is not final, and submissions no orchestrator has taken yet.
func (q *quotas) running(ctx context.Context, tenant string) (int64, error) {
	entries, err := q.checkpoints.ListMatching(ctx, tenant+".*")
	if err != nil {
		return 0, fmt.Errorf("gateway: count running workflows: %w", err)
	}
	var n int64
	created := make(map[string]bool, len(entries))
	for _, e := range entries {
		var cp struct {
			Status events.State `json:"status"`
		}
		created[strings.TrimPrefix(e.Key, tenant+".")] = true
		if workflow.UnmarshalCheckpoint(e.Value, &cp) == nil && !cp.Status.Terminal() {
			n++
		}
	}
	subj, err := subjects.Submit(tenant)
	if err != nil {
		return 0, err
	}
	// A submission stays stored until its orchestrator has created the
	// workflow's checkpoint: one whose checkpoint exists is counted once.
	ids, err := q.bus.StoredHeader(ctx, subjects.StreamWorkflows, subj, events.HeaderWorkflow, maxCountedSubmissions)
	if err != nil && !errors.Is(err, bus.ErrNotFound) {
		return 0, fmt.Errorf("gateway: count running workflows: %w", err)
	}
	for _, id := range ids {
		if !created[id] {
			n++
		}
	}
	return n, nil
}

// maxCountedSubmissions bounds the stored submissions a running count
// reads: a backlog past it is a quota exceeded many times over anyway.
const maxCountedSubmissions = 10_000

// queuedSteps counts tenant's step requests stored and not yet done.
func (q *quotas) queuedSteps(ctx context.Context, tenant string) (int64, error) {
	steps, err := subjects.TenantSteps(tenant)
	if err != nil {
		return 0, err
	}
	queued, err := subjects.TenantQueued(tenant)
	if err != nil {
		return 0, err
	}
	a, err := q.stored(ctx, subjects.StreamSteps, steps)
	if err != nil {
		return 0, fmt.Errorf("gateway: count queued steps: %w", err)
	}
	b, err := q.stored(ctx, subjects.StreamQueue, queued)
	if err != nil {
		return 0, fmt.Errorf("gateway: count queued steps: %w", err)
	}
	return a + b, nil
}

// stored is bus.Stored, a stream that does not exist holding nothing.
func (q *quotas) stored(ctx context.Context, stream, filter string) (int64, error) {
	n, err := q.bus.Stored(ctx, stream, filter)
	if errors.Is(err, bus.ErrNotFound) {
		return 0, nil
	}
	return int64(n), err
}
