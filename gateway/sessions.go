package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/sessions"
	"github.com/agentbus/agentbus/subjects"
)

// SessionResponse is the answer to GET /v1/sessions/{id}: a conversation's
// turns, oldest first, and its rolling summary.
type SessionResponse struct {
	SessionID string `json:"session_id"`
	TenantID  string `json:"tenant_id"`
	User      string `json:"user,omitempty"`
	// TurnCount counts every turn; Turns holds the newest ones in full
	// (older ones live on in the summary).
	TurnCount int           `json:"turn_count"`
	Turns     []events.Turn `json:"turns"`
	// Summary sums up turns 1 to SummaryCovers (brought up to date every
	// third turn); SummaryBy is "extractive" or the model that wrote it.
	Summary       string    `json:"summary,omitempty"`
	SummaryCovers int       `json:"summary_covers,omitempty"`
	SummaryBy     string    `json:"summary_by,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// session answers GET /v1/sessions/{id} for the request's tenant and
// user: a token's user reads only its own sessions, a token without one
// only the tenant-wide ones; an admin token (or anyone with auth off)
// reads a user's with ?user= or X-Agentbus-User.
func (g *Gateway) session(w http.ResponseWriter, r *http.Request) {
	tenant, user, ok := g.sessionScope(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	whose := ""
	if user != "" {
		whose = fmt.Sprintf(" of user %q", user)
	}
	if err := subjects.ValidSession(id); err != nil {
		writeError(w, http.StatusNotFound, apiError{Code: "not_found", Message: fmt.Sprintf("no session %q", id),
			Problems: []Problem{pathProblem("id", "%s is not a session id: %v", quoted(id), err)}})
		return
	}
	s, err := g.sessions.Load(r.Context(), tenant, user, id)
	if errors.Is(err, sessions.ErrNotFound) {
		writeError(w, http.StatusNotFound, apiError{Code: "not_found",
			Message:  fmt.Sprintf("no session %q%s in tenant %q (sessions start with a workflow submitted with session_id, and expire after --session-ttl without a turn)", id, whose, tenant),
			Problems: []Problem{pathProblem("id", "no session %s%s", quoted(id), whose)}})
		return
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return
	}
	turns := s.Turns
	if turns == nil {
		turns = []events.Turn{}
	}
	writeJSON(w, http.StatusOK, SessionResponse{
		SessionID: s.SessionID, TenantID: s.TenantID, User: s.User, TurnCount: s.Count(), Turns: turns,
		Summary: s.Summary, SummaryCovers: s.SummaryCovers, SummaryBy: s.SummaryBy, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
	})
}

// SessionsResponse is the answer to GET /v1/sessions: the caller's
// sessions, newest first (at most 100).
type SessionsResponse struct {
	TenantID string           `json:"tenant_id"`
	User     string           `json:"user,omitempty"`
	Sessions []sessions.Brief `json:"sessions"`
}

// sessionList answers GET /v1/sessions for the request's tenant and user
// (scoped as GET /v1/sessions/{id}).
func (g *Gateway) sessionList(w http.ResponseWriter, r *http.Request) {
	tenant, user, ok := g.sessionScope(w, r)
	if !ok {
		return
	}
	list, err := g.sessions.List(r.Context(), tenant, user)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, SessionsResponse{TenantID: tenant, User: user, Sessions: list})
}

// sessionScope is the tenant and user whose sessions the request reads:
// its own, or with ?user= another user's for an admin token (or with auth
// off); it answers 400/401/403 itself.
func (g *Gateway) sessionScope(w http.ResponseWriter, r *http.Request) (tenant, user string, ok bool) {
	if tenant, ok = g.tenant(w, r); !ok {
		return "", "", false
	}
	if user, ok = g.user(w, r); !ok {
		return "", "", false
	}
	if q := r.URL.Query().Get("user"); q != "" && q != user {
		if !g.mayNameUser(r) {
			writeError(w, http.StatusForbidden, apiError{Code: "forbidden", Message: "only an admin token may read another user's sessions",
				Problems: []Problem{queryProblem("user", "%s: this token reads its own sessions only", quoted(q))}})
			return "", "", false
		}
		if err := subjects.ValidUser(q); err != nil {
			writeBadRequest(w, queryProblem("user", "%s is not a user id: %v", quoted(q), err))
			return "", "", false
		}
		user = q
	}
	return tenant, user, true
}

// mayNameUser reports whether the request may act for a user it names:
// an admin token, or auth off.
func (g *Gateway) mayNameUser(r *http.Request) bool {
	p, ok := r.Context().Value(principalKey{}).(principal)
	if !ok {
		return !g.cfg.Auth.mw.on()
	}
	return p.role == RoleAdmin
}
