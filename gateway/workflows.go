package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agentbus/agentbus/workflow"

	"github.com/google/uuid"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

func (g *Gateway) submit(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	key, ok := idempotencyKey(w, r)
	if !ok {
		return
	}
	body, ok := g.readBody(w, r)
	if !ok {
		return
	}
	if err := schemas.Validate(schemas.WorkflowRequest, body); err != nil {
		var ve *schemas.ValidationError
		if errors.As(err, &ve) {
			writeInvalidBody(w, ve)
			return
		}
		writeError(w, http.StatusInternalServerError, apiError{Code: "internal", Message: err.Error()})
		return
	}
	var req SubmitRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeBadRequest(w, Problem{In: InBody, Message: err.Error()})
		return
	}
	if req.WorkflowID == reservedWorkflowID {
		// GET /v1/workflows/events is the tenant's live feed, so a
		// workflow of that id could never be read back.
		writeBadRequest(w, Problem{In: InBody, Pointer: "/workflow_id", Message: fmt.Sprintf("%q is reserved (GET /v1/workflows/events is the tenant's live feed); choose another id", reservedWorkflowID)})
		return
	}
	if !g.checkInputs(w, r, req.Plan) || !g.checkPermissions(w, r, tenant, req.Plan) {
		return
	}
	// The user comes from the token (or, for an admin token or with auth
	// off, X-Agentbus-User), never from the body.
	user, ok := g.user(w, r)
	if !ok {
		return
	}
	sub := req.Submitted()
	sub.User = user
	g.start(w, r, tenant, key, req.WorkflowID, sub)
}

// reservedWorkflowID is a path of its own under /v1/workflows.
const reservedWorkflowID = "events"

// start submits a new workflow (see submitWorkflow) and answers 202; an
// answer an earlier submission with the same idempotency key had made
// says so in ReplayedHeader.
func (g *Gateway) start(w http.ResponseWriter, r *http.Request, tenant, key, workflow string, sub events.WorkflowSubmitted) {
	if resp, ok := g.submitWorkflow(w, r, tenant, key, workflow, sub); ok {
		if resp.Replayed {
			w.Header().Set(api.ReplayedHeader, "true")
		}
		writeJSON(w, http.StatusAccepted, resp)
	}
}

// submitWorkflow stores a submission for a new workflow (store: id
// generated if empty, quotas, idempotency key) and waits until an
// orchestrator recorded it; on a failure it answers the request itself
// and reports false.
func (g *Gateway) submitWorkflow(w http.ResponseWriter, r *http.Request, tenant, key, workflow string, sub events.WorkflowSubmitted) (SubmitResponse, bool) {
	resp, err := g.store(r.Context(), tenant, key, workflow, sub)
	if err != nil {
		g.writeSubmitError(w, tenant, key, workflow, err)
		return SubmitResponse{}, false
	}
	ck, _ := subjects.CheckpointKey(tenant, resp.WorkflowID)
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.AcceptTimeout)
	defer cancel()
	if _, err := g.checkpoints.Wait(ctx, ck); err == nil {
		resp.Status = api.StatusAccepted
	}
	base := "/v1/workflows/" + url.PathEscape(resp.WorkflowID)
	resp.EventsURL, resp.StateURL = base+"/events", base
	return resp, true
}

// storer is the Publisher of the gateway's submissions (api.Submit): it
// publishes with the dedup id, waiting out a stream that elects a leader
// for up to StoreTimeout (bus.Publish tries again with the same id, so it
// is stored once), in a producer span (trace.go).
type storer struct{ g *Gateway }

var _ api.Publisher[bus.Published] = storer{}

// Publish publishes env to subj with dedup id msgID.
func (s storer) Publish(ctx context.Context, subj string, env events.Envelope, msgID string) (bus.Published, error) {
	ctx, cancel := context.WithTimeout(ctx, s.g.cfg.StoreTimeout)
	defer cancel()
	sent := s.g.sendSpan(ctx, subj, &env)
	p, err := s.g.bus.Publish(ctx, subj, env, msgID)
	sent(err)
	return p, err
}

// newWorkflowID returns a time-ordered UUID (v7), a valid workflow token.
func newWorkflowID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// state answers GET /v1/workflows/{id} with the workflow's checkpoint.
func (g *Gateway) state(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	cp, ok := g.checkpoint(w, r, tenant)
	if !ok {
		return
	}
	delete(cp, "outbox") // internal bookkeeping, not state
	writeJSON(w, http.StatusOK, cp)
}

// checkpoint loads the {id} workflow's checkpoint or writes 404/503; a
// workflow the request does not see (another user's: auth_scope.go) is
// the same 404 as one that does not exist.
func (g *Gateway) checkpoint(w http.ResponseWriter, r *http.Request, tenant string) (map[string]json.RawMessage, bool) {
	return g.readCheckpoint(w, r, tenant, g.checkpoints.GetFresh)
}

// streamCheckpoint is checkpoint for a stream's start, read from any
// replica (bus.KV.Get): every WebSocket and SSE connection reads it, and
// only a reset frame's status — rare — would show an older state.
func (g *Gateway) streamCheckpoint(w http.ResponseWriter, r *http.Request, tenant string) (map[string]json.RawMessage, bool) {
	return g.readCheckpoint(w, r, tenant, g.checkpoints.Get)
}

func (g *Gateway) readCheckpoint(w http.ResponseWriter, r *http.Request, tenant string,
	get func(context.Context, string) (bus.Entry, error)) (map[string]json.RawMessage, bool) {
	id := r.PathValue("id")
	key, err := subjects.CheckpointKey(tenant, id)
	if err != nil {
		// 404 as for any unknown id (no such workflow can exist), saying why.
		writeError(w, http.StatusNotFound, apiError{Code: "not_found", Message: fmt.Sprintf("no workflow %q", id),
			Problems: []Problem{pathProblem("id", "%s is not a workflow id: %v", quoted(id), err)}})
		return nil, false
	}
	notFound := func() {
		// The same answer for another tenant's or user's workflow: nothing
		// says it exists.
		writeError(w, http.StatusNotFound, apiError{Code: "not_found", Message: fmt.Sprintf("no workflow %q", id),
			Problems: []Problem{pathProblem("id", "no workflow %s", quoted(id))}})
	}
	e, err := get(r.Context(), key)
	if errors.Is(err, bus.ErrNotFound) {
		notFound()
		return nil, false
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return nil, false
	}
	var cp map[string]json.RawMessage
	if err := workflow.UnmarshalCheckpoint(e.Value, &cp); err != nil {
		if !g.scopeOf(r.Context()).all {
			notFound() // whose it is cannot be told
			return nil, false
		}
		writeError(w, http.StatusInternalServerError, apiError{Code: "internal", Message: "corrupt checkpoint"})
		return nil, false
	}
	if !g.visible(r.Context(), cp) {
		notFound()
		return nil, false
	}
	return cp, true
}
