package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// summary is a workflow in a listing.
type summary struct {
	WorkflowID  string          `json:"workflow_id"`
	Status      events.State    `json:"status"`
	Query       string          `json:"query,omitempty"`
	CreatedAt   json.RawMessage `json:"created_at"`
	UpdatedAt   json.RawMessage `json:"updated_at"`
	ResumeCount int             `json:"resume_count"`
	Error       json.RawMessage `json:"error,omitempty"`
	// User is whom the workflow runs for; only an admin's list (or one
	// with auth off) mixes users.
	User string `json:"user,omitempty"`
	// ParentWorkflow is the workflow whose step started this one (its
	// metadata "parent_workflow": a sub-workflow or a tool call).
	ParentWorkflow string `json:"parent_workflow,omitempty"`
}

// listed is a checkpoint as the list reads it.
type listed struct {
	summary
	Metadata struct {
		ParentWorkflow string `json:"parent_workflow"`
		ScheduleID     string `json:"schedule_id"` // events.MetadataScheduleID
	} `json:"metadata"`
}

// list answers GET /v1/workflows?status=…&parent_workflow=…&limit=…&after=…:
// the tenant's workflows that the request sees (auth_scope.go) in id
// order (ids are time-ordered UUIDs when the gateway made them), paged by
// the last id seen; parent_workflow keeps the children of a workflow
// (those whose metadata names it: sub-workflows and tool calls).
func (g *Gateway) list(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	status := events.State(q.Get("status"))
	switch status {
	case "", events.StateSubmitted, events.StateWorking, events.StateInputRequired, events.StateCompleted,
		events.StateFailed, events.StateCanceled, events.StateRejected:
	default:
		writeBadRequest(w, queryProblem("status", "%s is not a workflow state: want submitted, working, input-required, completed, failed, canceled or rejected", quoted(string(status))))
		return
	}
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeBadRequest(w, queryProblem("limit", "%s: want an integer in [1, 1000]", quoted(v)))
			return
		}
		limit = n
	}
	// after is the last workflow id of the previous page (its "next" link):
	// anything else is a mistake that would silently restart or skip the
	// listing, so it is refused.
	after := q.Get("after")
	if err := subjects.ValidWorkflow(after); after != "" && err != nil {
		writeBadRequest(w, queryProblem("after", "%s is not a workflow id (the cursor is the last workflow_id of the previous page, as its next link gives): %v", quoted(after), err))
		return
	}
	// schedule_id lists the runs of one schedule (their metadata names it).
	sched := q.Get("schedule_id")
	if err := subjects.ValidSchedule(sched); sched != "" && err != nil {
		writeBadRequest(w, queryProblem("schedule_id", "%s is not a schedule id: %v", quoted(sched), err))
		return
	}
	parent := q.Get("parent_workflow")
	if err := subjects.ValidWorkflow(parent); parent != "" && err != nil {
		writeBadRequest(w, queryProblem("parent_workflow", "%s is not a workflow id: %v", quoted(parent), err))
		return
	}
	entries, err := g.checkpoints.ListMatching(r.Context(), tenant+".*")
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Key < entries[j].Key })
	sc := g.scopeOf(r.Context())
	out := []summary{}
	next := ""
	for _, e := range entries {
		var l listed
		if workflow.UnmarshalCheckpoint(e.Value, &l) != nil || l.WorkflowID <= after || (status != "" && l.Status != status) || !sc.sees(l.User) ||
			(parent != "" && l.Metadata.ParentWorkflow != parent) {
			continue
		}
		if sched != "" && l.Metadata.ScheduleID != sched {
			continue
		}
		s := l.summary
		s.ParentWorkflow = l.Metadata.ParentWorkflow
		if len(out) == limit {
			next = out[len(out)-1].WorkflowID
			break
		}
		out = append(out, s)
	}
	resp := map[string]any{"workflows": out}
	if next != "" {
		v := url.Values{"status": {string(status)}, "limit": {strconv.Itoa(limit)}, "after": {next}}
		if sched != "" {
			v.Set("schedule_id", sched)
		}
		if parent != "" {
			v.Set("parent_workflow", parent)
		}
		resp["next"] = "/v1/workflows?" + v.Encode()
	}
	writeJSON(w, http.StatusOK, resp)
}

// checkpoints answers GET /v1/workflows/{id}/checkpoints: every kept
// revision, oldest first; the newest is "active" (or the workflow's final
// state), the others "superseded".
func (g *Gateway) checkpointsHistory(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	if _, ok := g.checkpoint(w, r, tenant); !ok {
		return
	}
	key, _ := subjects.CheckpointKey(tenant, r.PathValue("id"))
	hist, err := g.checkpoints.History(r.Context(), key)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return
	}
	out := make([]api.Revision, 0, len(hist))
	for i, e := range hist {
		var cp map[string]json.RawMessage
		if workflow.UnmarshalCheckpoint(e.Value, &cp) != nil {
			continue
		}
		delete(cp, "outbox")
		var status events.State
		_ = json.Unmarshal(cp["status"], &status)
		st := workflow.RevisionStatus(i == len(hist)-1, status)
		b, _ := json.Marshal(cp)
		out = append(out, api.Revision{Revision: e.Revision, Status: st, Checkpoint: b})
	}
	writeJSON(w, http.StatusOK, map[string]any{"workflow_id": r.PathValue("id"), "revisions": out})
}

// fork starts a new workflow from a checkpoint revision of {id}.
func (g *Gateway) fork(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	var req ForkRequest
	if !g.body(w, r, schemas.ForkRequest, &req) {
		return
	}
	cp, ok := g.checkpoint(w, r, tenant)
	if !ok {
		return
	}
	from := r.PathValue("id")
	key, _ := subjects.CheckpointKey(tenant, from)
	hist, err := g.checkpoints.History(r.Context(), key)
	if err != nil && !errors.Is(err, bus.ErrNotFound) {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return
	}
	found := false
	for _, e := range hist {
		found = found || e.Revision == req.Revision
	}
	if !found {
		writeError(w, http.StatusNotFound, apiError{Code: "not_found", Message: fmt.Sprintf("workflow %q has no kept checkpoint revision %d", from, req.Revision),
			Problems: []Problem{{In: InBody, Pointer: "/revision", Message: fmt.Sprintf("no such revision %d", req.Revision)}}})
		return
	}
	// The fork runs for its parent's user, whoever asks (the parent's
	// owner or an admin): it carries the parent's step outputs, that
	// user's facts.
	g.start(w, r, tenant, "", req.WorkflowID, events.WorkflowSubmitted{Fork: &events.ForkOf{WorkflowID: from, Revision: req.Revision}, User: ownerOf(cp["user"])})
}
