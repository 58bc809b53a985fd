package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
)

// Metadata keys the gateway puts on submissions that came through A2A.
const (
	metaInterface = "interface"
	metaContextID = "a2a_context_id"
	metaMessageID = "a2a_message_id"
)

// maxA2AID bounds client-chosen ids (messageId, contextId).
const maxA2AID = 256

// rawPart is one part of an A2A message (kind text, data or file) or of a
// legacy /tasks/send message ({"type": "text", "text": …} or just
// {"text": …}): the kind is inferred when absent.
type rawPart struct {
	Kind string          `json:"kind"`
	Type string          `json:"type"`
	Text *string         `json:"text"`
	Data json.RawMessage `json:"data"`
	File json.RawMessage `json:"file"`
}

// partsInput is what a message's parts ask for: a workflow request body
// (schema workflow.request) whose fields point back into the message.
type partsInput struct {
	Query     string
	Plan      json.RawMessage
	TimeoutMS json.RawMessage
	// partsAt, queryAt and dataAt are the JSON pointers of the parts, of
	// the text that gave the query and of the data part.
	partsAt, queryAt, dataAt string
}

// decodeParts reads a message's parts (found at pointer at): text parts
// joined by newlines are the query; one data part may carry "plan",
// "query" and "timeout_ms". File parts are not understood.
func decodeParts(raw json.RawMessage, at string) (partsInput, *rpcError) {
	in := partsInput{partsAt: at}
	var parts []json.RawMessage
	if rerr := decodeParams(raw, at, &parts); rerr != nil {
		return in, rerr
	}
	if len(parts) == 0 {
		return in, rpcErr(rpcInvalidParams, at, "want at least one part: text (the query) or data ({\"plan\": …})")
	}
	var texts []string
	for i, p := range parts {
		pat := at + "/" + strconv.Itoa(i)
		var part rawPart
		if len(p) == 0 || p[0] != '{' {
			return in, rpcErr(rpcInvalidParams, pat, "want a part object")
		}
		if rerr := decodeParams(p, pat, &part); rerr != nil {
			return in, rerr
		}
		kind := part.Kind
		if kind == "" {
			kind = part.Type
		}
		if kind == "" {
			switch {
			case part.Text != nil:
				kind = "text"
			case part.Data != nil:
				kind = "data"
			case part.File != nil:
				kind = "file"
			}
		}
		switch kind {
		case "text":
			if part.Text == nil {
				return in, rpcErr(rpcInvalidParams, pat+"/text", "required in a text part")
			}
			if len(texts) == 0 {
				in.queryAt = pat + "/text"
			}
			texts = append(texts, *part.Text)
		case "data":
			if in.dataAt != "" {
				return in, rpcErr(rpcInvalidParams, pat, "only one data part is understood, and %s is one", in.dataAt)
			}
			in.dataAt = pat + "/data"
			if rerr := in.decodeData(part.Data); rerr != nil {
				return in, rerr
			}
		case "file":
			return in, rpcErr(rpcUnsupportedContentType, pat, "file parts are not understood: send text or data")
		default:
			return in, rpcErr(rpcInvalidParams, pat+"/kind", "want text, data or file, got %q", kind)
		}
	}
	if len(texts) > 0 {
		if in.Query != "" {
			return in, rpcErr(rpcInvalidParams, in.dataAt+"/query", "the text parts already give the query")
		}
		in.Query = strings.Join(texts, "\n")
	}
	return in, nil
}

func (in *partsInput) decodeData(raw json.RawMessage) *rpcError {
	var fields map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return rpcErr(rpcInvalidParams, in.dataAt, "want an object such as {\"plan\": {\"steps\": […]}}")
	}
	for k, v := range fields {
		switch k {
		case "plan":
			in.Plan = v
		case "timeout_ms":
			in.TimeoutMS = v
		case "query":
			if json.Unmarshal(v, &in.Query) != nil {
				return rpcErr(rpcInvalidParams, in.dataAt+"/query", "want a string")
			}
			in.queryAt = in.dataAt + "/query"
		default:
			return rpcErr(rpcInvalidParams, in.dataAt+"/"+escapePointer(k), "unknown field: a data part takes plan, query and timeout_ms")
		}
	}
	return nil
}

// submission validates the input as a workflow request (schema
// workflow.request) with the given id and metadata, and returns what to
// publish. Problems point into the message, not into the request.
func (in partsInput) submission(workflowID string, meta map[string]string, idAt string) (events.WorkflowSubmitted, *rpcError) {
	if in.Query == "" && in.Plan == nil {
		return events.WorkflowSubmitted{}, rpcErr(rpcInvalidParams, in.partsAt,
			"want a text part (the query) or a data part {\"plan\": …}")
	}
	body := map[string]any{}
	if workflowID != "" {
		body["workflow_id"] = workflowID
	}
	if in.Query != "" {
		body["query"] = in.Query
	}
	if in.Plan != nil {
		body["plan"] = in.Plan
	}
	if in.TimeoutMS != nil {
		body["timeout_ms"] = in.TimeoutMS
	}
	if len(meta) > 0 {
		body["metadata"] = meta
	}
	b, err := json.Marshal(body)
	if err != nil {
		return events.WorkflowSubmitted{}, rpcErr(rpcInvalidParams, in.dataAt, "%v", err)
	}
	if err := schemas.Validate(schemas.WorkflowRequest, b); err != nil {
		var ve *schemas.ValidationError
		if !errors.As(err, &ve) {
			return events.WorkflowSubmitted{}, rpcErr(rpcInternalError, "", "%v", err)
		}
		out := &rpcError{Code: rpcInvalidParams}
		for _, p := range ve.Problems {
			out.Problems = append(out.Problems, schemas.Problem{Pointer: in.pointer(p.Pointer, idAt), Message: p.Message})
		}
		out.Pointer, out.Detail = out.Problems[0].Pointer, out.Problems[0].Message
		if len(out.Problems) > 1 {
			out.Detail += fmt.Sprintf(" (and %d more problems)", len(out.Problems)-1)
		}
		return events.WorkflowSubmitted{}, out
	}
	var req struct { // the fields of gateway.SubmitRequest a message gives
		Query     string            `json:"query"`
		Plan      *events.Plan      `json:"plan"`
		Metadata  map[string]string `json:"metadata"`
		TimeoutMS int64             `json:"timeout_ms"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		return events.WorkflowSubmitted{}, rpcErr(rpcInvalidParams, in.dataAt, "%v", err)
	}
	return events.WorkflowSubmitted{Query: req.Query, Plan: req.Plan, Metadata: req.Metadata, TimeoutMS: req.TimeoutMS}, nil
}

// pointer maps a pointer into the workflow request to the message field
// it came from.
func (in partsInput) pointer(p, idAt string) string {
	field, rest, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	if rest != "" {
		rest = "/" + rest
	}
	switch field {
	case "query":
		if in.queryAt != "" {
			return in.queryAt + rest
		}
	case "plan", "timeout_ms":
		if in.dataAt != "" {
			return in.dataAt + "/" + field + rest
		}
	case "workflow_id":
		return idAt
	}
	// The whole request (neither a query nor a plan): the parts as a
	// whole are at fault.
	return in.partsAt
}

// escapePointer escapes a key as one JSON pointer token (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
