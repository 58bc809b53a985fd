package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

// body reads and validates a JSON body against schema (an empty body is
// "{}"), writing 400/413 on failure.
func (g *Gateway) body(w http.ResponseWriter, r *http.Request, schema string, v any) bool {
	b, ok := g.readBody(w, r)
	if !ok {
		return false
	}
	if strings.TrimSpace(string(b)) == "" {
		b = []byte("{}")
	}
	if err := schemas.Validate(schema, b); err != nil {
		var ve *schemas.ValidationError
		if errors.As(err, &ve) {
			writeInvalidBody(w, ve)
			return false
		}
		writeError(w, http.StatusInternalServerError, apiError{Code: "internal", Message: err.Error()})
		return false
	}
	if err := json.Unmarshal(b, v); err != nil {
		writeBadRequest(w, Problem{In: InBody, Message: err.Error()})
		return false
	}
	return true
}

// readBody reads a request body of at most MaxBodyBytes, writing 413 or
// 400 on failure.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		msg := fmt.Sprintf("body exceeds %d bytes", mbe.Limit)
		writeError(w, http.StatusRequestEntityTooLarge, apiError{Code: "too_large", Message: msg, Problems: []Problem{{In: InBody, Message: msg}}})
		return nil, false
	}
	if err != nil {
		writeBadRequest(w, Problem{In: InBody, Message: "reading body: " + err.Error()})
		return nil, false
	}
	return b, true
}

// control sends a control action to the orchestrators (a request on the
// workflow's control subject, which every worker also hears) and answers
// with the result: 200 applied, 409 not applicable, 404 unknown workflow,
// 503 no orchestrator answered.
func (g *Gateway) control(action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenant, ok := g.tenant(w, r)
		if !ok {
			return
		}
		var req ControlRequest
		if !g.body(w, r, schemas.ControlRequest, &req) {
			return
		}
		if _, ok := g.checkpoint(w, r, tenant); !ok {
			return
		}
		g.send(w, r, tenant, r.PathValue("id"), req.Control(action))
	}
}

// send sends a control message to the orchestrators and writes their
// answer: 200 applied, 409 not applicable, 404 unknown workflow, 503 no
// orchestrator answered.
func (g *Gateway) send(w http.ResponseWriter, r *http.Request, tenant, id string, c events.Control) {
	res, status, err := g.apply(r.Context(), tenant, id, c)
	if err != nil {
		writeError(w, status, *err)
		return
	}
	writeJSON(w, status, res)
}

// apply sends a control message to the orchestrators and returns their
// answer with the HTTP status it has, or the error to answer.
func (g *Gateway) apply(ctx context.Context, tenant, id string, c events.Control) (events.ControlResult, int, *apiError) {
	var res events.ControlResult
	subj, _ := subjects.Control(tenant, id)
	env, err := events.New(events.TypeControl, newWorkflowID(), events.SourceGateway, tenant, id, c.StepID, c)
	if err != nil {
		return res, http.StatusInternalServerError, &apiError{Code: "internal", Message: err.Error()}
	}
	out, e, err := g.request(ctx, subj, env)
	if err != nil {
		// No answer — no orchestrator listening, none in time, or this
		// gateway stopping under the request (its context canceled) — is
		// unavailable: the caller may try again, here or on another node.
		// 502 is for an answer that was wrong.
		return res, http.StatusServiceUnavailable, &apiError{Code: "unavailable", Message: "no orchestrator answered: " + err.Error()}
	}
	if e.Error != "" {
		status := http.StatusBadGateway
		switch {
		case e.Unavailable:
			status = http.StatusServiceUnavailable
		case strings.Contains(e.Error, "no such workflow"):
			status = http.StatusNotFound
		}
		return res, status, &apiError{Code: "control_failed", Message: e.Error}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, http.StatusBadGateway, &apiError{Code: "control_failed", Message: "bad answer from the orchestrator"}
	}
	if !res.Applied {
		return res, http.StatusConflict, nil
	}
	return res, http.StatusOK, nil
}

// request sends a control request to the orchestrators and returns their
// answer, trying again with the same message (its ce-id unchanged) while
// no orchestrator answers or the one that did found its store without a
// leader, until StoreTimeout: an election is waited out, not reported.
func (g *Gateway) request(ctx context.Context, subj string, env events.Envelope) ([]byte, events.ControlAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.StoreTimeout)
	defer cancel()
	backoff := 50 * time.Millisecond
	for {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		out, err := g.bus.Request(actx, subj, env)
		acancel()
		var e events.ControlAnswer
		if err == nil {
			_ = json.Unmarshal(out, &e)
			if !e.Unavailable {
				return out, e, nil
			}
		} else if !errors.Is(err, bus.ErrNoResponder) {
			return nil, e, err
		}
		select {
		case <-ctx.Done():
			return out, e, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}
