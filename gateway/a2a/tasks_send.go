package a2a

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentbus/agentbus/schemas"
)

// tasksSendRequest is the body of the legacy POST /tasks/send, the seed
// system's endpoint: a task id (optional, else one is made), a message
// whose text parts are the query (or whose data part holds {"plan": …}),
// and whether to stream.
type tasksSendRequest struct {
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
// last), else it waits up to Config.BlockTimeout for the task to end
// or need input and answers the A2A task: 200, or 202 if no orchestrator
// recorded it yet.
func (g *Server) tasksSend(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.gw.Tenant(w, r)
	if !ok {
		return
	}
	body, ok := g.gw.ReadBody(w, r)
	if !ok {
		return
	}
	req, rerr := decodeTasksSend(body)
	if rerr != nil {
		g.writeLegacyError(w, rerr)
		return
	}
	in, rerr := decodeParts(mustJSON(req.Message.Parts), "/message/parts")
	if rerr != nil {
		g.writeLegacyError(w, rerr)
		return
	}
	ctx := r.Context()
	if req.ID != "" {
		if g.taskExists(ctx, tenant, req.ID) {
			g.gw.WriteError(w, http.StatusConflict, "exists", fmt.Sprintf("task %q already exists", req.ID), nil)
			return
		}
	}
	task, rerr := g.startTask(ctx, tenant, req.ID, "/id", in, newWorkflowID(), req.SessionID)
	if rerr != nil {
		g.writeLegacyError(w, rerr)
		return
	}
	if req.Stream {
		g.tasksSendStream(ctx, w, tenant, task)
		return
	}
	g.awaitSettled(ctx, tenant, string(task.ID), 0)
	cp, rerr := g.loadTask(ctx, tenant, string(task.ID))
	if rerr != nil {
		g.gw.WriteJSON(w, http.StatusAccepted, task)
		return
	}
	t := cp.task(req.HistoryLength)
	if req.SessionID != "" {
		t.ContextID = req.SessionID
	}
	g.gw.WriteJSON(w, http.StatusOK, t)
}

// decodeTasksSend checks a /tasks/send body; every problem points at its
// field.
func decodeTasksSend(body []byte) (tasksSendRequest, *rpcError) {
	var req tasksSendRequest
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
func (g *Server) writeLegacyError(w http.ResponseWriter, rerr *rpcError) {
	code, msg, probs := "invalid_request", rerr.Detail, rerr.Problems
	if len(probs) == 0 {
		probs = []schemas.Problem{{Pointer: rerr.Pointer, Message: rerr.Detail}}
	}
	if rerr.Pointer != "" {
		msg = rerr.Pointer + ": " + rerr.Detail
	}
	status := http.StatusBadRequest
	switch rerr.Code {
	case rpcUnsupportedContentType:
		status, code = http.StatusUnsupportedMediaType, "unsupported_content"
	case rpcInternalError:
		status, code, probs = http.StatusServiceUnavailable, "unavailable", nil
	}
	g.gw.WriteError(w, status, code, msg, probs)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
