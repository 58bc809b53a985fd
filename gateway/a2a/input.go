package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	// metaUpload names the ingest workflow that indexed the task's file
	// parts before it started.
	metaUpload = "a2a_upload"
)

// searchOptions are the data-part keys that are options of the planned
// query's search step (schema agent.search.input), each with the input
// field it sets: the seed's "top_k" is the search agent's "k".
var searchOptions = map[string]string{
	"top_k": "k", "k": "k", "profiles": "profiles", "filters": "filters",
	"ensemble": "ensemble", "max_per_doc": "max_per_doc",
}

// searchInputSchema is the search step's input schema, which the options
// are checked against.
const searchInputSchema = "agent.search.input"

// dataKeys lists what a data part takes, for error messages.
const dataKeys = "plan, query, timeout_ms and the search options top_k (or k), profiles, filters, ensemble and max_per_doc"

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
	// Options are the search options of the data part, keyed by the
	// search input field they set; optionAt points at each one's key.
	Options  map[string]json.RawMessage
	optionAt map[string]string
	// Files are the message's file parts, to be uploaded to the tenant's
	// index before the task starts.
	Files []filePart
	// History is the conversation before this message (POST /tasks/send
	// "messages"), oldest first: turns to seed the task's session with.
	History []events.Turn
	// partsAt, queryAt and dataAt are the JSON pointers of the parts, of
	// the text that gave the query and of the data part.
	partsAt, queryAt, dataAt string
}

// filePart is an A2A file part given by its bytes.
type filePart struct {
	Name, MIMEType string
	Bytes          []byte
	// At is the part's JSON pointer.
	At string
}

// decodeParts reads a message's parts (found at pointer at): text parts
// joined by newlines are the query; one data part may carry "plan",
// "query", "timeout_ms" and search options (searchOptions); file parts
// with bytes are documents to index.
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
			f, rerr := decodeFile(part.File, pat)
			if rerr != nil {
				return in, rerr
			}
			in.Files = append(in.Files, f)
		default:
			return in, rpcErr(rpcInvalidParams, pat+"/kind", "want text, data or file, got %q", kind)
		}
	}
	if len(texts) == 0 && in.Query == "" && in.Plan == nil && len(in.Files) > 0 {
		return in, rpcErr(rpcInvalidParams, at, "file parts are indexed for the query: add a text part (the query)")
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
			field, ok := searchOptions[k]
			at := in.dataAt + "/" + escapePointer(k)
			if !ok {
				return rpcErr(rpcInvalidParams, at, "unknown key %q: a data part takes %s", k, dataKeys)
			}
			if prev, dup := in.optionAt[field]; dup {
				return rpcErr(rpcInvalidParams, at, "%s already sets %s", prev, field)
			}
			if in.Options == nil {
				in.Options, in.optionAt = map[string]json.RawMessage{}, map[string]string{}
			}
			in.Options[field], in.optionAt[field] = v, at
		}
	}
	return in.checkOptions()
}

// checkOptions validates the search options as the search step's input
// (schema agent.search.input), each problem at the data part's key.
func (in *partsInput) checkOptions() *rpcError {
	if len(in.Options) == 0 {
		return nil
	}
	if in.Plan != nil {
		field := slices.Sorted(maps.Keys(in.optionAt))[0]
		return rpcErr(rpcInvalidParams, in.optionAt[field],
			"search options apply to a planned query: with an explicit plan, set them in its search step's input")
	}
	err := schemas.Validate(searchInputSchema, in.optionsJSON())
	var ve *schemas.ValidationError
	if err == nil || !errors.As(err, &ve) || len(ve.Problems) == 0 {
		return nil
	}
	p := ve.Problems[0]
	field, rest, _ := strings.Cut(strings.TrimPrefix(p.Pointer, "/"), "/")
	at, ok := in.optionAt[field]
	if !ok {
		at = in.dataAt
	}
	if rest != "" {
		at += "/" + rest
	}
	return rpcErr(rpcInvalidParams, at, "%s", p.Message)
}

// optionsJSON is the search options as one JSON object.
func (in partsInput) optionsJSON() []byte {
	b, _ := json.Marshal(in.Options)
	return b
}

// decodeFile reads an A2A file part's file ({"name", "mimeType",
// "bytes"}): its bytes are base64. A file by "uri" is not fetched.
func decodeFile(raw json.RawMessage, at string) (filePart, *rpcError) {
	var f struct {
		Name     string  `json:"name"`
		MIMEType string  `json:"mimeType"`
		Bytes    *[]byte `json:"bytes"`
		URI      *string `json:"uri"`
	}
	f2 := filePart{At: at}
	if len(raw) == 0 || raw[0] != '{' {
		return f2, rpcErr(rpcInvalidParams, at+"/file", "required in a file part: {\"name\", \"mimeType\", \"bytes\": base64}")
	}
	if rerr := decodeParams(raw, at+"/file", &f); rerr != nil {
		return f2, rerr
	}
	switch {
	case f.URI != nil:
		return f2, rpcErr(rpcUnsupportedContentType, at+"/file/uri", "files are not fetched from a uri: send their content as \"bytes\" (base64)")
	case f.Bytes == nil:
		return f2, rpcErr(rpcInvalidParams, at+"/file/bytes", "required: the file's content, base64")
	case strings.TrimSpace(f.Name) == "":
		return f2, rpcErr(rpcInvalidParams, at+"/file/name", "required: the file's name, its document id in the index")
	}
	f2.Name, f2.MIMEType, f2.Bytes = f.Name, f.MIMEType, *f.Bytes
	return f2, nil
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
	if len(in.Options) > 0 {
		meta = maps.Clone(meta)
		if meta == nil {
			meta = map[string]string{}
		}
		meta[events.MetadataSearchOptions] = string(in.optionsJSON())
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
