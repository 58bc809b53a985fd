package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/schemas"
)

// JSON-RPC 2.0 error codes, and the A2A ones in the server-error range.
const (
	rpcParseError             = -32700
	rpcInvalidRequest         = -32600
	rpcMethodNotFound         = -32601
	rpcInvalidParams          = -32602
	rpcInternalError          = -32603
	rpcTaskNotFound           = -32001
	rpcTaskNotCancelable      = -32002
	rpcPushNotSupported       = -32003
	rpcUnsupportedOperation   = -32004
	rpcUnsupportedContentType = -32005
	rpcExtendedCardNotEnabled = -32007
	// rpcQuotaExceeded is agentbus's own: the tenant is at a quota (its
	// data names it, with retry_after in seconds), as HTTP's 429.
	rpcQuotaExceeded = -32029
)

// rpcMessages are the codes' standard messages.
var rpcMessages = map[int]string{
	rpcParseError:             "Parse error",
	rpcInvalidRequest:         "Invalid Request",
	rpcMethodNotFound:         "Method not found",
	rpcInvalidParams:          "Invalid params",
	rpcInternalError:          "Internal error",
	rpcTaskNotFound:           "Task not found",
	rpcTaskNotCancelable:      "Task cannot be canceled",
	rpcPushNotSupported:       "Push Notification is not supported",
	rpcUnsupportedOperation:   "This operation is not supported",
	rpcUnsupportedContentType: "Incompatible content types",
	rpcExtendedCardNotEnabled: "Authenticated Extended Card is not configured",
	rpcQuotaExceeded:          "Quota exceeded",
}

// The A2A JSON-RPC methods.
const (
	methodSend        = "message/send"
	methodStream      = "message/stream"
	methodGet         = "tasks/get"
	methodCancel      = "tasks/cancel"
	methodResubscribe = "tasks/resubscribe"
)

// rpcError is a JSON-RPC error object. Its data says what exactly was wrong
// ("error", which a2a-go clients surface in their error text) and where
// (the JSON pointer into the request document, and every schema problem).
type rpcError struct {
	Code     int
	Detail   string
	Pointer  string
	Problems []schemas.Problem
	// Quota and RetryAfter say which quota refused a submission, and
	// when to try again (rpcQuotaExceeded).
	Quota      *api.Quota
	RetryAfter time.Duration
}

func (e *rpcError) Error() string {
	if e.Pointer != "" {
		return fmt.Sprintf("%s: %s: %s", rpcMessages[e.Code], e.Pointer, e.Detail)
	}
	return rpcMessages[e.Code] + ": " + e.Detail
}

// MarshalJSON writes {code, message, data: {error, pointer, problems}}.
func (e *rpcError) MarshalJSON() ([]byte, error) {
	type data struct {
		Error      string            `json:"error,omitempty"`
		Pointer    *string           `json:"pointer,omitempty"`
		Problems   []schemas.Problem `json:"problems,omitempty"`
		Quota      *api.Quota        `json:"quota,omitempty"`
		RetryAfter int               `json:"retry_after,omitempty"`
	}
	out := struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    *data  `json:"data,omitempty"`
	}{Code: e.Code, Message: rpcMessages[e.Code]}
	if e.Detail != "" || e.Pointer != "" || len(e.Problems) > 0 {
		out.Data = &data{Error: e.Detail, Problems: e.Problems, Quota: e.Quota}
		if e.RetryAfter > 0 {
			out.Data.RetryAfter = int(math.Ceil(e.RetryAfter.Seconds()))
		}
		if e.Pointer != "" || e.Code == rpcInvalidParams {
			out.Data.Pointer = &e.Pointer
		}
	}
	return json.Marshal(out)
}

func rpcErr(code int, pointer, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Pointer: pointer, Detail: fmt.Sprintf(format, args...)}
}

func errTaskNotFound(id string) *rpcError {
	return rpcErr(rpcTaskNotFound, "/params/id", "no task %q", id)
}

// nullID is the id of an answer to a request whose own id is unknown.
var nullID = json.RawMessage("null")

// rpcRequest is a decoded JSON-RPC request.
type rpcRequest struct {
	// ID is the request's id as sent (a string, a number or null), echoed
	// in every answer.
	ID     json.RawMessage
	Method string
	// Params is the params object, nil when absent.
	Params json.RawMessage
}

// decodeRPC checks a JSON-RPC 2.0 request document. On failure the
// returned request still carries the id if one could be read, so that the
// error answer can echo it.
func decodeRPC(body []byte) (rpcRequest, *rpcError) {
	req := rpcRequest{ID: nullID}
	body = bytes.TrimSpace(body)
	if !json.Valid(body) {
		return req, parseError(body)
	}
	switch body[0] {
	case '{':
	case '[':
		return req, rpcErr(rpcInvalidRequest, "", "batch requests are not supported: send one request object per call")
	default:
		return req, rpcErr(rpcInvalidRequest, "", "want a JSON-RPC request object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return req, rpcErr(rpcInvalidRequest, "", "want a JSON-RPC request object")
	}
	id, ok := raw["id"]
	if !ok {
		return req, rpcErr(rpcInvalidRequest, "/id", "required: every A2A method answers, so notifications are not accepted")
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9', string(id) == "null":
		req.ID = id
	default:
		return req, rpcErr(rpcInvalidRequest, "/id", "want a string, a number or null")
	}
	var version string
	if v, ok := raw["jsonrpc"]; !ok || json.Unmarshal(v, &version) != nil || version != "2.0" {
		return req, rpcErr(rpcInvalidRequest, "/jsonrpc", `want "2.0"`)
	}
	if m, ok := raw["method"]; !ok || json.Unmarshal(m, &req.Method) != nil || req.Method == "" {
		return req, rpcErr(rpcInvalidRequest, "/method", "want a method name")
	}
	if p, ok := raw["params"]; ok && string(p) != "null" {
		if p[0] != '{' {
			return req, rpcErr(rpcInvalidParams, "/params", "want an object")
		}
		req.Params = p
	}
	return req, nil
}

// parseError says where a body stops being JSON.
func parseError(body []byte) *rpcError {
	var v any
	err := json.Unmarshal(body, &v)
	var se *json.SyntaxError
	switch {
	case len(body) == 0:
		return rpcErr(rpcParseError, "", "empty body: want a JSON-RPC request object")
	case errors.As(err, &se):
		return rpcErr(rpcParseError, "", "body is not JSON: %v (at byte %d)", se, se.Offset)
	case err != nil:
		return rpcErr(rpcParseError, "", "body is not JSON: %v", err)
	}
	return rpcErr(rpcParseError, "", "body is not JSON")
}

// decodeParams unmarshals params (at pointer at) into v, turning type
// errors into invalid params at the offending field.
func decodeParams(params json.RawMessage, at string, v any) *rpcError {
	if params == nil {
		return rpcErr(rpcInvalidParams, at, "required")
	}
	err := json.Unmarshal(params, v)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		p := at
		if te.Field != "" {
			p += "/" + strings.ReplaceAll(te.Field, ".", "/")
		}
		return rpcErr(rpcInvalidParams, p, "want %s, got %s", jsonKind(te.Type.Kind().String()), te.Value)
	default:
		return rpcErr(rpcInvalidParams, at, "%v", err)
	}
}

// jsonKind names a Go kind in JSON terms.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr", "interface":
		return "an object"
	}
	return "a number"
}

// writeRPC writes one JSON-RPC answer: a result or an error.
func writeRPC(w http.ResponseWriter, status int, id json.RawMessage, result any, rerr *rpcError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(rpcAnswer(id, result, rerr))
}

// rpcAnswer is a JSON-RPC response object.
func rpcAnswer(id json.RawMessage, result any, rerr *rpcError) any {
	if rerr != nil {
		return struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *rpcError       `json:"error"`
		}{"2.0", id, rerr}
	}
	return struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, result}
}

// a2aRPC answers POST /a2a: one JSON-RPC 2.0 request. Errors are JSON-RPC
// error objects with HTTP 200, as JSON-RPC over HTTP wants, except an
// oversize body (413); the streaming methods answer Server-Sent Events,
// errors included.
func (g *Server) a2aRPC(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.gw.Tenant(w, r)
	if !ok {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.maxBodyBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeRPC(w, http.StatusRequestEntityTooLarge, nullID, nil, rpcErr(rpcInvalidRequest, "", "body exceeds %d bytes", mbe.Limit))
		return
	}
	if err != nil {
		writeRPC(w, http.StatusBadRequest, nullID, nil, rpcErr(rpcParseError, "", "reading body: %v", err))
		return
	}
	req, rerr := decodeRPC(body)
	if rerr != nil {
		writeRPC(w, http.StatusOK, req.ID, nil, rerr)
		return
	}
	if !g.gw.MayControl(r) && (req.Method == methodSend || req.Method == methodStream || req.Method == methodCancel) {
		g.authFailures.WithLabelValues("forbidden").Inc()
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentbus", error="insufficient_scope"`)
		writeRPC(w, http.StatusForbidden, req.ID, nil, rpcErr(rpcInvalidRequest, "/method",
			"a viewer token is read-only: %s needs a client or admin token; %s and %s are allowed", req.Method, methodGet, methodResubscribe))
		return
	}
	if req.Method == methodSend || req.Method == methodStream {
		key, rerr := idempotencyKey(r)
		if rerr != nil {
			writeRPC(w, http.StatusOK, req.ID, nil, rerr)
			return
		}
		r = r.WithContext(withKey(r.Context(), key))
	}
	var result any
	switch req.Method {
	case methodStream, methodResubscribe:
		g.rpcStream(w, r, tenant, req)
		return
	case methodSend:
		result, rerr = g.rpcSend(r.Context(), tenant, req.Params)
	case methodGet:
		result, rerr = g.rpcGet(r.Context(), tenant, req.Params)
	case methodCancel:
		result, rerr = g.rpcCancel(r.Context(), tenant, req.Params)
	case "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete":
		rerr = rpcErr(rpcPushNotSupported, "/method", "agentbus streams updates (message/stream, tasks/resubscribe) instead of pushing them")
	case "agent/getAuthenticatedExtendedCard":
		rerr = rpcErr(rpcExtendedCardNotEnabled, "/method", "the public card at /.well-known/agent-card.json is the whole card")
	default:
		rerr = rpcErr(rpcMethodNotFound, "/method", "no method %q; the methods are %s, %s, %s, %s and %s",
			req.Method, methodSend, methodStream, methodGet, methodCancel, methodResubscribe)
	}
	writeRPC(w, http.StatusOK, req.ID, result, rerr)
}

// keyKey is the context key of a request's idempotency key.
type keyKey struct{}

// withKey returns ctx carrying the idempotency key of its request ("" for
// none), which startTask submits with.
func withKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyKey{}, key)
}

// keyOf is the idempotency key withKey put in ctx, "" if none.
func keyOf(ctx context.Context) string {
	k, _ := ctx.Value(keyKey{}).(string)
	return k
}

// idempotencyKey reads the request's Idempotency-Key header (message/send
// and message/stream): "" when it has none, an invalid request error
// naming the header when it is malformed or sent twice.
func idempotencyKey(r *http.Request) (string, *rpcError) {
	vs := r.Header.Values(api.IdempotencyHeader)
	switch {
	case len(vs) == 0:
		return "", nil
	case len(vs) > 1:
		return "", rpcErr(rpcInvalidRequest, "", "header %s: sent %d times: send one key", api.IdempotencyHeader, len(vs))
	}
	if err := api.ValidIdempotencyKey(vs[0]); err != nil {
		if len(vs[0]) > api.MaxIdempotencyKey {
			return "", rpcErr(rpcInvalidRequest, "", "header %s: %d bytes: want %s", api.IdempotencyHeader, len(vs[0]), api.IdempotencyKeyRule)
		}
		return "", rpcErr(rpcInvalidRequest, "", "header %s: %q: want %s", api.IdempotencyHeader, vs[0], api.IdempotencyKeyRule)
	}
	return vs[0], nil
}
