package schemas

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	fastjson "github.com/segmentio/encoding/json"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed *.json
var files embed.FS

// base is the $id prefix of every schema; ".invalid" keeps it from ever
// resolving on a network.
const base = "https://schemas.agentbus.invalid/"

// Names of the schemas, as passed to Validate.
const (
	Plan            = "plan"
	WorkflowRequest = "workflow.request"
	ForkRequest     = "fork.request"
	ControlRequest  = "control.request"
	// ScheduleRequest, SchedulePatch and ScheduleBackfill are the bodies
	// of POST /v1/schedules, PATCH /v1/schedules/{id} and POST
	// /v1/schedules/{id}/backfill.
	ScheduleRequest  = "schedule.request"
	SchedulePatch    = "schedule.patch"
	ScheduleBackfill = "schedule.backfill"
	// WaitInput is the input of a wait step (capability wait), which the
	// orchestrator checks when it plans.
	WaitInput = "wait.input"
	// BulkRequest is the body of POST /v1/workflows/bulk.
	BulkRequest = "bulk.request"
)

// ErrUnknownSchema is returned by Validate for a name that has no schema.
var ErrUnknownSchema = errors.New("schemas: unknown schema")

// ErrInvalid is wrapped by every *ValidationError.
var ErrInvalid = errors.New("schemas: invalid document")

// Problem is one reason a document failed: where (a JSON pointer, "" for the
// whole document) and what.
type Problem struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// ValidationError lists every problem found in a document, sorted by pointer.
type ValidationError struct {
	Schema   string
	Problems []Problem
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		ptr := p.Pointer
		if ptr == "" {
			ptr = "/"
		}
		parts[i] = ptr + ": " + p.Message
	}
	return fmt.Sprintf("schemas: invalid %s: %s", e.Schema, strings.Join(parts, "; "))
}

// Unwrap lets errors.Is(err, ErrInvalid) hold.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

var (
	once     sync.Once
	compiled map[string]*jsonschema.Schema
	fast     map[string]*fastSchema // the schemas the fast path can check
	loadErr  error
	printer  = message.NewPrinter(language.English)
)

// Names returns the name of every embedded schema.
func Names() []string {
	load()
	out := make([]string, 0, len(compiled))
	for n := range compiled {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Source returns the raw text of the named schema, for serving to clients.
func Source(name string) ([]byte, error) {
	b, err := files.ReadFile(name + ".json")
	if err != nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownSchema, name)
	}
	return b, nil
}

// Load compiles every embedded schema now rather than on the first
// validation, which would otherwise pay for it (about 15 ms: a replay's
// first event, a worker's first step); the long-running roles call it as
// they start. It reports a schema that does not compile.
func Load() error {
	load()
	return loadErr
}

func load() {
	once.Do(func() {
		c := jsonschema.NewCompiler()
		entries, err := fs.ReadDir(files, ".")
		if err != nil {
			loadErr = err
			return
		}
		var names []string
		docs := map[string][]byte{}
		for _, e := range entries {
			docs[e.Name()], _ = files.ReadFile(e.Name())
		}
		fast = fastSchemas(docs)
		for _, e := range entries {
			b := docs[e.Name()]
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				loadErr = fmt.Errorf("schemas: %s: %w", e.Name(), err)
				return
			}
			if err := c.AddResource(base+e.Name(), doc); err != nil {
				loadErr = fmt.Errorf("schemas: %s: %w", e.Name(), err)
				return
			}
			names = append(names, strings.TrimSuffix(e.Name(), ".json"))
		}
		compiled = make(map[string]*jsonschema.Schema, len(names))
		for _, n := range names {
			s, err := c.Compile(base + n + ".json")
			if err != nil {
				loadErr = fmt.Errorf("schemas: compile %s: %w", n, err)
				return
			}
			compiled[n] = s
		}
	})
}

// Validate checks the JSON document data against the named schema. It
// returns nil, a *ValidationError listing every problem with its JSON pointer,
// or ErrUnknownSchema.
func Validate(name string, data []byte) error {
	load()
	if loadErr != nil {
		return loadErr
	}
	s, ok := compiled[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownSchema, name)
	}
	f, hasFast := fast[name]
	return validate(name, s, f, hasFast, data)
}

// validate checks data against s, compiled from the schema called name;
// when hasFast, f is the same schema compiled for the fast path (fast.go),
// which is asked first.
func validate(name string, s *jsonschema.Schema, f *fastSchema, hasFast bool, data []byte) error {
	if hasFast && fastjson.Valid(data) && f.accepts(data) { // segmentio's Valid: encoding/json's verdict, faster
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &ValidationError{Schema: name, Problems: []Problem{{Pointer: "", Message: "not valid JSON: " + err.Error()}}}
	}
	err = s.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("schemas: validate %s: %w", name, err)
	}
	out := &ValidationError{Schema: name}
	collect(ve, &out.Problems)
	sort.SliceStable(out.Problems, func(i, j int) bool { return out.Problems[i].Pointer < out.Problems[j].Pointer })
	return out
}

// collect gathers the leaves of the error tree: they say what is wrong, the
// inner nodes only say which subschema failed.
func collect(ve *jsonschema.ValidationError, out *[]Problem) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			collect(c, out)
		}
		return
	}
	ptr := pointer(ve.InstanceLocation)
	if r, ok := ve.ErrorKind.(*kind.Required); ok && len(r.Missing) > 0 {
		for _, m := range r.Missing {
			*out = append(*out, Problem{Pointer: ptr + "/" + escape(m), Message: "required property is missing"})
		}
		return
	}
	if d, ok := ve.ErrorKind.(*kind.DependentRequired); ok && len(d.Missing) > 0 {
		for _, m := range d.Missing {
			*out = append(*out, Problem{Pointer: ptr + "/" + escape(m), Message: fmt.Sprintf("required property is missing (%q needs it)", d.Prop)})
		}
		return
	}
	if _, ok := ve.ErrorKind.(*kind.FalseSchema); ok {
		*out = append(*out, Problem{Pointer: ptr, Message: "property is not allowed here with the others given"})
		return
	}
	if a, ok := ve.ErrorKind.(*kind.AdditionalProperties); ok && len(a.Properties) > 0 {
		for _, p := range a.Properties {
			*out = append(*out, Problem{Pointer: ptr + "/" + escape(p), Message: fmt.Sprintf("property %q is not allowed here", p)})
		}
		return
	}
	*out = append(*out, Problem{Pointer: ptr, Message: ve.ErrorKind.LocalizedString(printer)})
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escape(t))
	}
	return b.String()
}

func escape(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}
