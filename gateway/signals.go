package gateway

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// signal answers POST /v1/workflows/{id}/signals/{name}: the body (any
// JSON; an empty one is null) is sent to the workflow as signal name,
// on its control subject. The wait step waiting for it completes with the
// body as its output; if none waits yet, the workflow keeps it for the
// one that will (200 either way, the message says which). 409 when the
// workflow has ended or keeps too many signals of the name, 404 unknown.
func (g *Gateway) signal(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	if err := subjects.ValidStep(name); err != nil {
		writeBadRequest(w, pathProblem("name", "%s is not a signal name (letters, digits, _ and -, at most 63): %v", quoted(name), err))
		return
	}
	b, ok := g.readBody(w, r)
	if !ok {
		return
	}
	data := json.RawMessage(strings.TrimSpace(string(b)))
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	if !json.Valid(data) {
		writeBadRequest(w, Problem{In: InBody, Message: "the signal's body is not JSON (send any JSON value, or nothing for null)"})
		return
	}
	if _, ok := g.checkpoint(w, r, tenant); !ok {
		return
	}
	g.send(w, r, tenant, r.PathValue("id"), events.Control{Action: events.ActionSignal, Signal: name, Data: data})
}
