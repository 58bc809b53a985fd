package gateway

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/agentbus/agentbus/retention"
)

// PurgeResponse is the answer to DELETE /v1/workflows/{id}: the workflow
// that was purged and what went with it.
type PurgeResponse struct {
	WorkflowID string           `json:"workflow_id"`
	TenantID   string           `json:"tenant_id"`
	Purged     retention.Purged `json:"purged"`
}

// purge answers DELETE /v1/workflows/{id}: an ended workflow the request
// sees is purged now, whatever its retention, with everything it left —
// its checkpoint and every revision, its events, its session turn, its
// upload (retention.Purger) — and is a 404 from then on; one that has not
// ended is 409 naming its status (cancel it first). A viewer token may
// not (403, as for every write); a client token purges the workflows it
// sees, as it cancels them.
func (g *Gateway) purge(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	if _, ok := g.checkpoint(w, r, tenant); !ok {
		return
	}
	id := r.PathValue("id")
	p, err := g.purger.Purge(r.Context(), tenant, id)
	var running *retention.RunningError
	switch {
	case errors.As(err, &running):
		writeError(w, http.StatusConflict, apiError{Code: "not_ended",
			Message:  fmt.Sprintf("workflow %q is %s: only an ended workflow is deleted; cancel it first (POST /v1/workflows/%s/cancel)", id, running.Status, id),
			Problems: []Problem{pathProblem("id", "workflow %s is %s, not ended", quoted(id), running.Status)}})
	case errors.Is(err, retention.ErrNotFound):
		writeError(w, http.StatusNotFound, apiError{Code: "not_found", Message: fmt.Sprintf("no workflow %q", id),
			Problems: []Problem{pathProblem("id", "no workflow %s", quoted(id))}})
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
	default:
		g.log.Info("workflow deleted", "tenant", tenant, "workflow", id, "status", p.Status, "events", p.Events, "revisions", p.Revisions)
		writeJSON(w, http.StatusOK, PurgeResponse{WorkflowID: id, TenantID: tenant, Purged: p})
	}
}
