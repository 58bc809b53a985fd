package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// TasksSendRequest is the body of the legacy POST /tasks/send, the seed
// system's endpoint: a task id (optional, else one is made), a message
// whose text parts are the query (or whose data part holds {"plan": …}),
// and whether to stream.
type TasksSendRequest struct {
	ID string `json:"id,omitempty"`
	// SessionID groups tasks, like an A2A context id.
	SessionID string `json:"sessionId,omitempty"`
	Message   struct {
		Role  string            `json:"role,omitempty"`
		Parts []json.RawMessage `json:"parts"`
	} `json:"message"`
	Stream        bool           `json:"stream,omitempty"`
	HistoryLength *int           `json:"historyLength,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
}

// tasksSend answers POST /tasks/send. It starts a workflow exactly as
// message/send does; with "stream": true it answers Server-Sent Events of
// the same updates as message/stream (the task, then status-update and
// artifact-update events, each named by its kind, final=true on the
// last), else it waits up to A2AConfig.BlockTimeout for the task to end
// or need input and answers the A2A task: 200, or 202 if no orchestrator
// recorded it yet.
func (g *Gateway) tasksSend(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	body, ok := g.readBody(w, r)
	if !ok {
		return
	}
	req, rerr := decodeTasksSend(body)
	if rerr != nil {
		writeLegacyError(w, rerr)
		return
	}
	in, rerr := decodeParts(mustJSON(req.Message.Parts), "/message/parts")
	if rerr != nil {
		writeLegacyError(w, rerr)
		return
	}
	ctx := r.Context()
	if req.ID != "" {
		if g.taskExists(ctx, tenant, req.ID) {
			writeError(w, http.StatusConflict, apiError{Code: "exists", Message: fmt.Sprintf("task %q already exists", req.ID)})
			return
		}
	}
	task, rerr := g.startTask(ctx, tenant, req.ID, "/id", in, newWorkflowID(), req.SessionID)
	if rerr != nil {
		writeLegacyError(w, rerr)
		return
	}
	if req.Stream {
		g.tasksSendStream(ctx, w, tenant, task)
		return
	}
	g.awaitSettled(ctx, tenant, string(task.ID), 0)
	cp, rerr := g.loadTask(ctx, tenant, string(task.ID))
	if rerr != nil {
		writeJSON(w, http.StatusAccepted, task)
		return
	}
	t := cp.task(req.HistoryLength)
	if req.SessionID != "" {
		t.ContextID = req.SessionID
	}
	writeJSON(w, http.StatusOK, t)
}

// decodeTasksSend checks a /tasks/send body; every problem points at its
// field.
func decodeTasksSend(body []byte) (TasksSendRequest, *rpcError) {
	var req TasksSendRequest
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return req, rpcErr(rpcInvalidParams, "", "want a JSON object: %v", err)
	}
	for k := range raw {
		switch k {
		case "id", "sessionId", "message", "stream", "historyLength", "metadata":
		default:
			return req, rpcErr(rpcInvalidParams, "/"+escapePointer(k), "unknown field: want id, sessionId, message, stream, historyLength or metadata")
		}
	}
	if rerr := decodeParams(body, "", &req); rerr != nil {
		return req, rerr
	}
	switch {
	case raw["message"] == nil:
		return req, rpcErr(rpcInvalidParams, "/message", "required: {\"parts\": [{\"text\": …}]}")
	case req.Message.Role != "" && req.Message.Role != "user":
		return req, rpcErr(rpcInvalidParams, "/message/role", `want "user"`)
	case req.Message.Parts == nil:
		return req, rpcErr(rpcInvalidParams, "/message/parts", "required")
	case len(req.SessionID) > maxA2AID:
		return req, rpcErr(rpcInvalidParams, "/sessionId", "longer than %d bytes", maxA2AID)
	case req.HistoryLength != nil && *req.HistoryLength < 0:
		return req, rpcErr(rpcInvalidParams, "/historyLength", "want a non-negative integer")
	}
	return req, nil
}

// writeLegacyError answers a /tasks/send problem in the REST error shape.
func writeLegacyError(w http.ResponseWriter, rerr *rpcError) {
	e := apiError{Code: "invalid_request", Message: rerr.Detail, Problems: bodyProblems(rerr.Problems)}
	if len(e.Problems) == 0 {
		e.Problems = []Problem{{In: InBody, Pointer: rerr.Pointer, Message: rerr.Detail}}
	}
	if rerr.Pointer != "" {
		e.Message = rerr.Pointer + ": " + rerr.Detail
	}
	status := http.StatusBadRequest
	switch rerr.Code {
	case rpcUnsupportedContentType:
		status, e.Code = http.StatusUnsupportedMediaType, "unsupported_content"
	case rpcInternalError:
		status, e.Code, e.Problems = http.StatusServiceUnavailable, "unavailable", nil
	}
	writeError(w, status, e)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
