package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// routePayload streams a workflow's large payload: {key} is the rest of
// its reference's key after "<tenant>/<workflow>/", so that the tenant
// comes from the request's credentials, never from the path.
const routePayload = "GET /v1/workflows/{id}/payloads/{key...}"

// payload answers GET /v1/workflows/{id}/payloads/{key...}: the bytes of
// a payload that travels as a reference (events.PayloadRef) in the
// workflow's state and events, streamed from the object store, with its
// Content-Type and Content-Length. The workflow must be one the request
// sees (GET /v1/workflows/{id} answers 200); a payload it does not hold
// is 404. With ?download=1 the answer asks a browser to save it.
func (g *Gateway) payload(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	if _, ok := g.checkpoint(w, r, tenant); !ok {
		return
	}
	id, rest := r.PathValue("id"), r.PathValue("key")
	notFound := func(msg string) {
		writeError(w, http.StatusNotFound, apiError{Code: "not_found", Message: msg,
			Problems: []Problem{pathProblem("key", "%s", msg)}})
	}
	if rest == "" || strings.Contains(rest, "..") {
		notFound(fmt.Sprintf("no payload %s in workflow %s", quoted(rest), id))
		return
	}
	ref := events.PayloadRef{Bucket: subjects.ObjectPayloads, Key: tenant + "/" + id + "/" + rest}
	p, err := g.bus.OpenPayload(r.Context(), tenant, ref)
	if errors.Is(err, bus.ErrNotFound) {
		notFound(fmt.Sprintf("no payload %s in workflow %s (purged with the workflow, or never stored)", quoted(rest), id))
		return
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return
	}
	defer p.Close()
	h := w.Header()
	h.Set("Content-Type", p.ContentType)
	if p.ContentType == "" {
		h.Set("Content-Type", "application/octet-stream")
	}
	h.Set("Content-Length", strconv.FormatInt(p.Size, 10))
	h.Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Get("download") != "" {
		name := strings.ReplaceAll(rest, "/", "-") + ".json"
		h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
	}
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, p); err != nil {
		g.log.Warn("payload download stopped", "workflow", id, "key", rest, "err", err)
	}
}
