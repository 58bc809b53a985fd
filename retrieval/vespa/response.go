package vespa

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentbus/agentbus/retrieval"
)

// queryResult is the Query API's default JSON result format.
type queryResult struct {
	Root struct {
		ID        string  `json:"id"`
		Relevance float64 `json:"relevance"`
		Fields    struct {
			TotalCount int64 `json:"totalCount"`
		} `json:"fields"`
		Coverage *Coverage  `json:"coverage"`
		Errors   []queryErr `json:"errors"`
		Children []queryHit `json:"children"`
	} `json:"root"`
}

type queryErr struct {
	Code    int    `json:"code"`
	Summary string `json:"summary"`
	Source  string `json:"source"`
	Message string `json:"message"`
}

type queryHit struct {
	ID        string                     `json:"id"`
	Relevance float64                    `json:"relevance"`
	Source    string                     `json:"source"`
	Fields    map[string]json.RawMessage `json:"fields"`
}

// parsed is a query answer, read.
type parsed struct {
	hits     []retrieval.Hit
	gens     []int64 // each hit's document generation (the gen field; 0 when absent)
	coverage Coverage
	total    int64
}

// parseResult reads a Query API answer with HTTP status status. Any
// root.errors entry, or a non-2xx status, is an *Error (Op op) carrying
// Vespa's code, summary and message; partial coverage is not an error.
func parseResult(op, doctype string, status int, body []byte) (parsed, error) {
	var res queryResult
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil {
		if status/100 != 2 {
			return parsed{}, &Error{Op: op, DocType: doctype, Status: status, Message: snippet(body)}
		}
		return parsed{}, fmt.Errorf("%w: %s (%s): %w: %s", ErrResponse, op, doctype, err, snippet(body))
	}
	if errs := res.Root.Errors; len(errs) > 0 {
		e := &Error{Op: op, DocType: doctype, Status: status, Code: errs[0].Code, Summary: errs[0].Summary}
		msgs := make([]string, 0, len(errs))
		for _, qe := range errs {
			msgs = append(msgs, qe.Message)
		}
		e.Message = strings.Join(msgs, "; ")
		return parsed{}, e
	}
	if status/100 != 2 {
		return parsed{}, &Error{Op: op, DocType: doctype, Status: status, Message: snippet(body)}
	}
	out := parsed{coverage: fullCoverage, total: res.Root.Fields.TotalCount}
	if res.Root.Coverage != nil {
		out.coverage = *res.Root.Coverage
	}
	out.hits = make([]retrieval.Hit, 0, len(res.Root.Children))
	for _, c := range res.Root.Children {
		h, err := toHit(c)
		if err != nil {
			return parsed{}, fmt.Errorf("%w: %s (%s): hit %q: %w", ErrResponse, op, doctype, c.ID, err)
		}
		out.hits = append(out.hits, h)
		var gen int64
		if raw, ok := c.Fields["gen"]; ok {
			_ = json.Unmarshal(raw, &gen)
		}
		out.gens = append(out.gens, gen)
	}
	return out, nil
}

// toHit maps a hit's summary fields (the schema's) onto a retrieval.Hit.
func toHit(c queryHit) (retrieval.Hit, error) {
	h := retrieval.Hit{Score: c.Relevance}
	str := func(name string, dst *string) error {
		raw, ok := c.Fields[name]
		if !ok || string(raw) == "null" {
			return nil
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
		return nil
	}
	for name, dst := range map[string]*string{"id": &h.ID, "doc_id": &h.DocID, "title": &h.Title, "text": &h.Text, "source": &h.Source} {
		if err := str(name, dst); err != nil {
			return h, err
		}
	}
	if h.ID == "" {
		// No id field in the summary: the user part of the document id,
		// id:<namespace>:<doctype>::<user part>.
		if _, user, ok := strings.Cut(c.ID, "::"); ok {
			h.ID = user
		} else {
			return h, fmt.Errorf("no id field and hit id %q is not a document id", c.ID)
		}
	}
	meta, err := hitMetadata(c.Fields)
	if err != nil {
		return h, err
	}
	h.Metadata = meta
	return h, nil
}

// hitMetadata prefers metadata_json (the values with their JSON types)
// and falls back to the metadata map, which Vespa renders as an object
// (Vespa 8) or as an array of {"key","value"} (older renderers).
func hitMetadata(fields map[string]json.RawMessage) (map[string]any, error) {
	if raw, ok := fields["metadata_json"]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("field metadata_json: %w", err)
		}
		if s != "" {
			var m map[string]any
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				return nil, fmt.Errorf("field metadata_json: %w", err)
			}
			return m, nil
		}
	}
	raw, ok := fields["metadata"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var obj map[string]string
	if err := json.Unmarshal(raw, &obj); err == nil {
		return toAny(obj), nil
	}
	var entries []struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("field metadata: want an object or [{key, value}]: %w", err)
	}
	obj = make(map[string]string, len(entries))
	for _, e := range entries {
		obj[e.Key] = e.Value
	}
	return toAny(obj), nil
}

func toAny(m map[string]string) map[string]any {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
