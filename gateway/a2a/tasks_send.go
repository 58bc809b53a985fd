package a2a

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

// tasksSendRequest is the body of the legacy POST /tasks/send, the seed
// system's endpoint: a task id (optional, else one is made), either a
// message whose text parts are the query (or whose data part holds
// {"plan": …} or search options) or messages, the conversation so far
// whose last user message is the query, and whether to stream.
type tasksSendRequest struct {
	ID string `json:"id,omitempty"`
	// SessionID groups tasks, like an A2A context id.
	SessionID     string            `json:"sessionId,omitempty"`
	Message       *legacyMessage    `json:"message"`
	Messages      []json.RawMessage `json:"messages"`
	Stream        bool              `json:"stream,omitempty"`
	HistoryLength *int              `json:"historyLength,omitempty"`
	Metadata      map[string]any    `json:"metadata,omitempty"`
}

// legacyMessage is one message of a /tasks/send body.
type legacyMessage struct {
	Role  string          `json:"role,omitempty"`
	Parts json.RawMessage `json:"parts"`
}

// Roles of the messages of a conversation: A2A's agent, and the
// "assistant" of chat APIs.
const (
	roleUser      = "user"
	roleAgent     = "agent"
	roleAssistant = "assistant"
)

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
	in, rerr := req.input()
	if rerr != nil {
		g.writeLegacyError(w, rerr)
		return
	}
	if req.SessionID, rerr = req.session(in); rerr != nil {
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
		case "id", "sessionId", "message", "messages", "stream", "historyLength", "metadata":
		default:
			return req, rpcErr(rpcInvalidParams, "/"+escapePointer(k), "unknown field: want id, sessionId, message or messages, stream, historyLength or metadata")
		}
	}
	if rerr := decodeParams(body, "", &req); rerr != nil {
		return req, rerr
	}
	switch {
	case raw["message"] != nil && raw["messages"] != nil:
		return req, rpcErr(rpcInvalidParams, "/messages", "send either message or messages, not both")
	case raw["messages"] != nil && len(req.Messages) == 0:
		return req, rpcErr(rpcInvalidParams, "/messages", "want at least one message: the last user message is the query")
	case raw["messages"] != nil:
	case req.Message == nil:
		return req, rpcErr(rpcInvalidParams, "/message", "required: {\"parts\": [{\"text\": …}]}, or messages [{\"role\", \"parts\"}, …]")
	case req.Message.Role != "" && req.Message.Role != roleUser:
		return req, rpcErr(rpcInvalidParams, "/message/role", `want "user"`)
	case req.Message.Parts == nil:
		return req, rpcErr(rpcInvalidParams, "/message/parts", "required")
	}
	switch {
	case len(req.SessionID) > maxA2AID:
		return req, rpcErr(rpcInvalidParams, "/sessionId", "longer than %d bytes", maxA2AID)
	case req.HistoryLength != nil && *req.HistoryLength < 0:
		return req, rpcErr(rpcInvalidParams, "/historyLength", "want a non-negative integer")
	}
	return req, nil
}

// input reads the request's message, or its messages: the last is the
// query and must be the user's; the earlier ones, text only, become the
// turns of the task's session (sessionId, or a new one when none is
// given), which the gateway seeds with them if it has no turns yet.
func (req *tasksSendRequest) input() (partsInput, *rpcError) {
	if req.Message != nil {
		return decodeParts(req.Message.Parts, "/message/parts")
	}
	last := len(req.Messages) - 1
	var history []events.Turn
	for i, raw := range req.Messages {
		at := "/messages/" + strconv.Itoa(i)
		var m legacyMessage
		if len(raw) == 0 || raw[0] != '{' {
			return partsInput{}, rpcErr(rpcInvalidParams, at, "want a message object {\"role\", \"parts\"}")
		}
		if rerr := decodeParams(raw, at, &m); rerr != nil {
			return partsInput{}, rerr
		}
		switch {
		case i == last && m.Role != "" && m.Role != roleUser:
			return partsInput{}, rpcErr(rpcInvalidParams, at+"/role", `want "user": the last message is the query`)
		case m.Role != "" && m.Role != roleUser && m.Role != roleAgent && m.Role != roleAssistant:
			return partsInput{}, rpcErr(rpcInvalidParams, at+"/role", `want "user", "agent" or "assistant"`)
		case m.Parts == nil:
			return partsInput{}, rpcErr(rpcInvalidParams, at+"/parts", "required")
		}
		in, rerr := decodeParts(m.Parts, at+"/parts")
		if rerr != nil || i == last {
			in.History = history
			return in, rerr
		}
		switch {
		case in.dataAt != "":
			return partsInput{}, rpcErr(rpcInvalidParams, in.dataAt, "only the last message's data parts are read: earlier messages are the conversation, in text parts")
		case len(in.Files) > 0:
			return partsInput{}, rpcErr(rpcInvalidParams, in.Files[0].At, "only the last message's file parts are indexed: earlier messages are the conversation, in text parts")
		}
		history = addTurn(history, m.Role, in.Query)
	}
	return partsInput{}, nil // not reached: the last message returned
}

// addTurn adds a message of the conversation to its turns: a user's
// message starts a turn, an agent's answers the turn before it (or is a
// turn of its own when that one has its answer).
func addTurn(turns []events.Turn, role, text string) []events.Turn {
	if role != roleUser && role != "" && len(turns) > 0 && turns[len(turns)-1].Answer == "" {
		turns[len(turns)-1].Answer = text
		return turns
	}
	t := events.Turn{WorkflowID: "history-" + strconv.Itoa(len(turns)+1), Status: events.StateCompleted}
	if role == roleUser || role == "" {
		t.Query = text
	} else {
		t.Answer = text
	}
	return append(turns, t)
}

// session is the session the task is a turn of: sessionId, or a new one
// when earlier messages need one.
func (req *tasksSendRequest) session(in partsInput) (string, *rpcError) {
	switch {
	case len(in.History) == 0:
		return req.SessionID, nil
	case req.SessionID == "":
		return newWorkflowID(), nil
	case subjects.ValidSession(req.SessionID) != nil:
		return "", rpcErr(rpcInvalidParams, "/sessionId",
			"earlier messages are kept as the turns of a session: want a session id of lowercase letters, digits, - and _, or none for a new one")
	}
	return req.SessionID, nil
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
