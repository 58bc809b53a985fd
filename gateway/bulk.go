package gateway

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/workflow"
)

// bulkConcurrency is how many control requests a bulk request has in
// flight at once.
const bulkConcurrency = 16

// bulkView is what a bulk filter reads of a checkpoint.
type bulkView struct {
	WorkflowID string            `json:"workflow_id"`
	Status     events.State      `json:"status"`
	Metadata   map[string]string `json:"metadata"`
	CreatedAt  time.Time         `json:"created_at"`
	User       string            `json:"user"`
	Paused     bool              `json:"paused"`
}

// bulk answers POST /v1/workflows/bulk (api.BulkRequest): the action is
// sent, as by POST /v1/workflows/{id}/{action}, to each of the tenant's
// workflows that the request sees and the filter matches (at most its
// limit, oldest id first), and the counts are answered (api.BulkResult).
func (g *Gateway) bulk(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	var req api.BulkRequest
	if !g.body(w, r, schemas.BulkRequest, &req) {
		return
	}
	var older time.Duration
	if req.Filter.OlderThan != "" {
		d, err := time.ParseDuration(req.Filter.OlderThan)
		if err != nil {
			writeBadRequest(w, Problem{In: InBody, Pointer: "/filter/older_than", Message: fmt.Sprintf("%s is not a duration: %v", quoted(req.Filter.OlderThan), err)})
			return
		}
		older = d
	}
	limit := req.Limit
	if limit <= 0 || limit > api.MaxBulk {
		limit = api.MaxBulk
	}
	entries, err := g.checkpoints.ListMatching(r.Context(), tenant+".*")
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Key < entries[j].Key })
	sc := g.scopeOf(r.Context())
	now := time.Now()
	res := api.BulkResult{Action: req.Action}
	var ids []string
	for _, e := range entries {
		var v bulkView
		if workflow.UnmarshalCheckpoint(e.Value, &v) != nil || !sc.sees(v.User) || !matches(req.Filter, v, older, now) {
			continue
		}
		res.Matched++
		if len(ids) < limit {
			ids = append(ids, v.WorkflowID)
		}
	}
	res.Limited = res.Matched > len(ids)
	g.applyAll(r.Context(), tenant, ids, events.Control{Action: req.Action, Reason: req.Reason}, &res)
	writeJSON(w, http.StatusOK, res)
}

// matches reports whether a workflow fits a bulk filter.
func matches(f api.BulkFilter, v bulkView, older time.Duration, now time.Time) bool {
	if len(f.Status) > 0 && !slices.Contains(f.Status, v.Status) {
		return false
	}
	for k, want := range f.Metadata {
		if got, ok := v.Metadata[k]; !ok || got != want {
			return false
		}
	}
	if f.OlderThan != "" && now.Sub(v.CreatedAt) <= older {
		return false
	}
	return f.Paused == nil || *f.Paused == v.Paused
}

// applyAll sends c to each workflow, a few at once, and counts the
// answers into res.
func (g *Gateway) applyAll(ctx context.Context, tenant string, ids []string, c events.Control, res *api.BulkResult) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan string)
	for range min(bulkConcurrency, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range next {
				out, _, aerr := g.apply(ctx, tenant, id, c)
				mu.Lock()
				switch {
				case aerr != nil:
					res.Failed++
				case out.Applied:
					res.Applied++
				default:
					res.NotApplied++
				}
				mu.Unlock()
			}
		}()
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			break
		}
		next <- id
	}
	close(next)
	wg.Wait()
	if n := res.Applied + res.NotApplied + res.Failed; n < len(ids) {
		res.Failed += len(ids) - n // the request ended first
	}
}
