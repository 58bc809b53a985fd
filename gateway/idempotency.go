package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// The idempotency bucket records keys, first writer wins.
var _ api.Claims = (*bus.KV)(nil)

// idempotencyKey reads the request's Idempotency-Key header: "" when it
// has none; a malformed one (or one sent twice) is answered 400 naming
// the header.
func idempotencyKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	vs := r.Header.Values(api.IdempotencyHeader)
	switch {
	case len(vs) == 0:
		return "", true
	case len(vs) > 1:
		writeBadRequest(w, headerProblem(api.IdempotencyHeader, "sent %d times: send one key", len(vs)))
		return "", false
	}
	if err := api.ValidIdempotencyKey(vs[0]); err != nil {
		if len(vs[0]) > api.MaxIdempotencyKey {
			writeBadRequest(w, headerProblem(api.IdempotencyHeader, "%d bytes: want %s", len(vs[0]), api.IdempotencyKeyRule))
			return "", false
		}
		writeBadRequest(w, headerProblem(api.IdempotencyHeader, "%s: want %s", quoted(vs[0]), api.IdempotencyKeyRule))
		return "", false
	}
	return vs[0], true
}

// claimsCache opens the idempotency bucket on the first submission with a
// key (creating it if the deployment has none yet) and keeps it; a
// failure is tried again by the next one.
type claimsCache struct {
	mu sync.Mutex
	kv *bus.KV
}

func (g *Gateway) claims(ctx context.Context) (*bus.KV, error) {
	g.idem.mu.Lock()
	defer g.idem.mu.Unlock()
	if g.idem.kv != nil {
		return g.idem.kv, nil
	}
	kv, err := g.bus.Idempotency(ctx)
	if err != nil {
		return nil, err
	}
	g.idem.kv = kv
	return kv, nil
}

// store is the one way the gateway stores a new workflow's submission,
// for every front door (POST /v1/workflows, fork, upload, A2A):
// api.SubmitOnce with the tenant's quotas and, if key is not "", its
// idempotency key. workflow "" has an id picked. The errors are
// SubmitOnce's, which writeSubmitError answers.
func (g *Gateway) store(ctx context.Context, tenant, key, workflow string, sub events.WorkflowSubmitted) (SubmitResponse, error) {
	o := api.Once{
		Key: key,
		Exists: func(ctx context.Context, workflow string) (bool, error) {
			ck, err := subjects.CheckpointKey(tenant, workflow)
			if err != nil {
				return false, err
			}
			// Only a checkpoint read says it exists. A read that fails (a
			// bucket electing its leader) does not refuse the submission:
			// its dedup key stores it once, and an orchestrator starts a
			// workflow id once, so the 409 is a courtesy, never a guard.
			_, err = g.checkpoints.Get(ctx, ck)
			return err == nil, nil
		},
		Admit: func(ctx context.Context) (func(), error) { return g.quotas.admit(ctx, tenant) },
	}
	if key != "" {
		c, err := g.claims(ctx)
		if err != nil {
			return SubmitResponse{}, err
		}
		o.Claims = c
	}
	// The role, like the user, comes from the token: the tool
	// permissions apply its rules.
	sub.Role = string(roleOf(ctx))
	return api.SubmitOnce(ctx, storer{g}, o, events.SourceGateway, tenant, workflow, sub)
}

// writeSubmitError answers a submission that store refused or could not
// make; workflow is the id asked for ("" if none), key the idempotency
// key ("" if none).
func (g *Gateway) writeSubmitError(w http.ResponseWriter, tenant, key, workflow string, err error) {
	var (
		reused *api.KeyReusedError
		quota  *api.QuotaError
		store  *api.StoreError
	)
	switch {
	case errors.Is(err, api.ErrWorkflowExists):
		writeError(w, http.StatusConflict, apiError{Code: "exists", Message: fmt.Sprintf("workflow %q already exists", workflow)})
	case errors.As(err, &reused):
		p := headerProblem(api.IdempotencyHeader, "%s was sent with another request within the last 24 hours, which started workflow %s",
			quoted(reused.Key), reused.Workflow)
		writeError(w, http.StatusConflict, apiError{Code: "idempotency_key_reused",
			Message: fmt.Sprintf("idempotency key %s was already used for a different request (workflow %s): send that same request again to get its workflow, or use a new key",
				quoted(reused.Key), reused.Workflow),
			Problems: []Problem{p}})
	case errors.As(err, &quota):
		writeQuotaError(w, quota)
	case errors.As(err, &store):
		g.log.Error("submit", "tenant", tenant, "workflow", store.Workflow, "err", store.Err)
		again := fmt.Sprintf("the same workflow_id %q", store.Workflow)
		if key != "" {
			again = fmt.Sprintf("the same %s", api.IdempotencyHeader)
		}
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: fmt.Sprintf(
			"could not store the submission within %s (send it again with %s: it is stored once): %v", g.cfg.StoreTimeout, again, store.Err)})
	default:
		g.log.Error("submit", "tenant", tenant, "workflow", workflow, "err", err)
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
	}
}

// writeQuotaError answers 429 quota_exceeded with Retry-After, naming the
// quota, its limit and the tenant's current value.
func writeQuotaError(w http.ResponseWriter, e *api.QuotaError) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(e.RetryAfter)))
	q := e.Quota
	writeError(w, http.StatusTooManyRequests, apiError{Code: "quota_exceeded", Message: e.Reason(), Quota: &q})
}

// retryAfterSeconds is d in whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
