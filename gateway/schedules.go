package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schedule"
	"github.com/agentbus/agentbus/schemas"
)

// ScheduleResponse is a schedule as the API answers it: its definition,
// what its fires did, and when it fires next (absent while paused).
type ScheduleResponse struct {
	schedule.Spec
	State      schedule.State `json:"state"`
	NextFireAt *time.Time     `json:"next_fire_at,omitempty"`
}

// BackfillResponse answers POST /v1/schedules/{id}/backfill: the runs
// fired, one a slot, oldest first.
type BackfillResponse struct {
	ScheduleID  string   `json:"schedule_id"`
	WorkflowIDs []string `json:"workflow_ids"`
}

// TriggerResponse answers POST /v1/schedules/{id}/trigger.
type TriggerResponse struct {
	ScheduleID string `json:"schedule_id"`
	WorkflowID string `json:"workflow_id"`
}

// scheduleStore opens the schedules' store on first use, so that a
// gateway that never serves a schedule never creates its stream.
type scheduleStore struct {
	mu    sync.Mutex
	store *schedule.Store
}

func (g *Gateway) routesSchedules() {
	g.mux.HandleFunc("POST /v1/schedules", g.createSchedule)
	g.mux.HandleFunc("GET /v1/schedules", g.listSchedules)
	g.mux.HandleFunc("GET /v1/schedules/{id}", g.getSchedule)
	g.mux.HandleFunc("PATCH /v1/schedules/{id}", g.patchSchedule)
	g.mux.HandleFunc("DELETE /v1/schedules/{id}", g.deleteSchedule)
	g.mux.HandleFunc("POST /v1/schedules/{id}/pause", g.pauseSchedule(true))
	g.mux.HandleFunc("POST /v1/schedules/{id}/unpause", g.pauseSchedule(false))
	g.mux.HandleFunc("POST /v1/schedules/{id}/trigger", g.triggerSchedule)
	g.mux.HandleFunc("POST /v1/schedules/{id}/backfill", g.backfillSchedule)
}

// schedules returns the store, or answers 503 and false.
// scheduleScope is what every schedule handler starts with: the
// request's tenant and the store; false once it has answered.
func (g *Gateway) scheduleScope(w http.ResponseWriter, r *http.Request) (string, *schedule.Store, bool) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return "", nil, false
	}
	st, ok := g.schedules(w, r.Context())
	return tenant, st, ok
}

func (g *Gateway) schedules(w http.ResponseWriter, ctx context.Context) (*schedule.Store, bool) {
	g.scheds.mu.Lock()
	defer g.scheds.mu.Unlock()
	if g.scheds.store == nil {
		st, err := schedule.Open(ctx, g.bus, events.SourceGateway)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
			return nil, false
		}
		g.scheds.store = st
	}
	return g.scheds.store, true
}

// validBody checks body against a schema, answering 400 naming the JSON
// pointers if it fails.
func validBody(w http.ResponseWriter, name string, body []byte) bool {
	err := schemas.Validate(name, body)
	var ve *schemas.ValidationError
	switch {
	case errors.As(err, &ve):
		writeInvalidBody(w, ve)
		return false
	case err != nil:
		writeError(w, http.StatusInternalServerError, apiError{Code: "internal", Message: err.Error()})
		return false
	}
	return true
}

// writeScheduleError answers a store's error: a problem with the spec as
// 400 naming its fields, an unknown schedule 404, a taken id 409.
func writeScheduleError(w http.ResponseWriter, id string, err error) {
	var ve *schemas.ValidationError
	switch {
	case errors.As(err, &ve):
		writeInvalidBody(w, ve)
	case errors.Is(err, schedule.ErrNotFound):
		writeError(w, http.StatusNotFound, apiError{Code: "not_found", Message: fmt.Sprintf("no schedule %q", id),
			Problems: []Problem{pathProblem("id", "no schedule %s", quoted(id))}})
	case errors.Is(err, schedule.ErrExists):
		writeError(w, http.StatusConflict, apiError{Code: "conflict", Message: fmt.Sprintf("schedule %q exists: PATCH it, or DELETE it first", id),
			Problems: []Problem{{In: InBody, Pointer: "/schedule_id", Message: "taken"}}})
	case errors.Is(err, schedule.ErrRange):
		writeBadRequest(w, Problem{In: InBody, Pointer: "/to", Message: err.Error()})
	default:
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
	}
}

func (g *Gateway) scheduleResponse(ctx context.Context, st *schedule.Store, tenant string, sp schedule.Spec) (ScheduleResponse, error) {
	state, _, err := st.State(ctx, tenant, sp.ScheduleID)
	if err != nil {
		return ScheduleResponse{}, err
	}
	resp := ScheduleResponse{Spec: sp, State: state}
	if next, ok := schedule.NextFire(sp, time.Now()); ok {
		resp.NextFireAt = &next
	}
	return resp, nil
}

func (g *Gateway) createSchedule(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	body, ok := g.readBody(w, r)
	if !ok || !validBody(w, schemas.ScheduleRequest, body) {
		return
	}
	var sp schedule.Spec
	if err := json.Unmarshal(body, &sp); err != nil {
		writeBadRequest(w, Problem{In: InBody, Message: err.Error()})
		return
	}
	user, ok := g.user(w, r)
	if !ok {
		return
	}
	sp.User = user
	st, ok := g.schedules(w, r.Context())
	if !ok {
		return
	}
	sp, err := st.Create(r.Context(), tenant, sp, time.Now())
	if err != nil {
		writeScheduleError(w, sp.ScheduleID, err)
		return
	}
	resp, err := g.scheduleResponse(r.Context(), st, tenant, sp)
	if err != nil {
		writeScheduleError(w, sp.ScheduleID, err)
		return
	}
	w.Header().Set("Location", "/v1/schedules/"+sp.ScheduleID)
	writeJSON(w, http.StatusCreated, resp)
}

func (g *Gateway) listSchedules(w http.ResponseWriter, r *http.Request) {
	tenant, st, ok := g.scheduleScope(w, r)
	if !ok {
		return
	}
	sps, err := st.List(r.Context(), tenant)
	if err != nil {
		writeScheduleError(w, "", err)
		return
	}
	out := make([]ScheduleResponse, 0, len(sps))
	for _, sp := range sps {
		resp, err := g.scheduleResponse(r.Context(), st, tenant, sp)
		if err != nil {
			writeScheduleError(w, sp.ScheduleID, err)
			return
		}
		out = append(out, resp)
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": out})
}

func (g *Gateway) getSchedule(w http.ResponseWriter, r *http.Request) {
	tenant, st, ok := g.scheduleScope(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	sp, _, err := st.Get(r.Context(), tenant, id)
	if err != nil {
		writeScheduleError(w, id, err)
		return
	}
	g.answerSchedule(w, r, st, tenant, sp, http.StatusOK)
}

func (g *Gateway) answerSchedule(w http.ResponseWriter, r *http.Request, st *schedule.Store, tenant string, sp schedule.Spec, status int) {
	resp, err := g.scheduleResponse(r.Context(), st, tenant, sp)
	if err != nil {
		writeScheduleError(w, sp.ScheduleID, err)
		return
	}
	writeJSON(w, status, resp)
}

func (g *Gateway) patchSchedule(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	body, ok := g.readBody(w, r)
	if !ok || !validBody(w, schemas.SchedulePatch, body) {
		return
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		writeBadRequest(w, Problem{In: InBody, Message: err.Error()})
		return
	}
	st, ok := g.schedules(w, r.Context())
	if !ok {
		return
	}
	id := r.PathValue("id")
	sp, err := st.Update(r.Context(), tenant, id, time.Now(), func(sp *schedule.Spec) error {
		// The schema checked each field's type: unmarshal cannot fail.
		for k, v := range fields {
			var dst any
			switch k {
			case "cron":
				dst = &sp.Cron
			case "every":
				dst = &sp.Every
			case "time_zone":
				dst = &sp.TimeZone
			case "jitter":
				dst = &sp.Jitter
			case "catchup_window":
				dst = &sp.CatchupWindow
			case "overlap":
				dst = &sp.Overlap
			case "paused":
				dst = &sp.Paused
			case "note":
				dst = &sp.Note
			case "workflow":
				sp.Workflow = schedule.Template{}
				dst = &sp.Workflow
			default:
				continue
			}
			if err := json.Unmarshal(v, dst); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		writeScheduleError(w, id, err)
		return
	}
	g.answerSchedule(w, r, st, tenant, sp, http.StatusOK)
}

func (g *Gateway) pauseSchedule(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenant, st, ok := g.scheduleScope(w, r)
		if !ok {
			return
		}
		id := r.PathValue("id")
		sp, err := st.Update(r.Context(), tenant, id, time.Now(), func(sp *schedule.Spec) error { sp.Paused = paused; return nil })
		if err != nil {
			writeScheduleError(w, id, err)
			return
		}
		g.answerSchedule(w, r, st, tenant, sp, http.StatusOK)
	}
}

func (g *Gateway) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	tenant, st, ok := g.scheduleScope(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if err := st.Delete(r.Context(), tenant, id); err != nil {
		writeScheduleError(w, id, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (g *Gateway) triggerSchedule(w http.ResponseWriter, r *http.Request) {
	tenant, st, ok := g.scheduleScope(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	run, err := st.Trigger(r.Context(), tenant, id, time.Now())
	if err != nil {
		writeScheduleError(w, id, err)
		return
	}
	writeJSON(w, http.StatusAccepted, TriggerResponse{ScheduleID: id, WorkflowID: run})
}

func (g *Gateway) backfillSchedule(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	body, ok := g.readBody(w, r)
	if !ok || !validBody(w, schemas.ScheduleBackfill, body) {
		return
	}
	var req struct {
		From    time.Time        `json:"from"`
		To      time.Time        `json:"to"`
		Overlap schedule.Overlap `json:"overlap"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeBadRequest(w, Problem{In: InBody, Message: err.Error()})
		return
	}
	st, ok := g.schedules(w, r.Context())
	if !ok {
		return
	}
	id := r.PathValue("id")
	runs, err := st.Backfill(r.Context(), tenant, id, req.From, req.To, time.Now(), req.Overlap)
	if err != nil {
		writeScheduleError(w, id, err)
		return
	}
	writeJSON(w, http.StatusAccepted, BackfillResponse{ScheduleID: id, WorkflowIDs: runs})
}
