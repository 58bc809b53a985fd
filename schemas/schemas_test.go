package schemas_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

// allNames is every schema the package must embed: one per event type, the
// plan, and the gateway's request body.
var allNames = []string{
	"artifact",
	"bulk.request",
	"cancelled",
	"complete",
	"control",
	"control.request",
	"custom",
	"deadline",
	"error",
	"fork.request",
	"plan",
	"progress",
	"quotas",
	"retention",
	"schedule.backfill",
	"schedule.fire",
	"schedule.patch",
	"schedule.request",
	"status",
	"step.completed",
	"step.failed",
	"step.requested",
	"step.running",
	"tokens",
	"tool_permissions",
	"wait.input",
	"workflow.request",
	"workflow.submitted",
}

func TestNames(t *testing.T) {
	var got []string
	for _, n := range schemas.Names() {
		// Agents' input and output schemas ("agent.<capability>.input",
		// "agent.<capability>.output") and the indexer's ("index.*") come
		// and go with them; each still needs its golden documents
		// (TestValidGolden).
		if !strings.HasPrefix(n, "agent.") && !strings.HasPrefix(n, "index.") {
			got = append(got, n)
		}
	}
	if !slices.Equal(got, allNames) {
		t.Fatalf("Names() = %q, want %q", got, allNames)
	}
	if !slices.Contains(got, schemas.Plan) || !slices.Contains(got, schemas.WorkflowRequest) {
		t.Fatalf("Names() = %q lacks the Plan or WorkflowRequest constant", got)
	}
}

// TestEverySchemaCompiles validates a trivial document against every
// schema: a schema that failed to compile would return a non-validation
// error here.
func TestEverySchemaCompiles(t *testing.T) {
	for _, name := range allNames {
		t.Run(name, func(t *testing.T) {
			err := schemas.Validate(name, []byte(`{}`))
			if err == nil {
				return
			}
			var ve *schemas.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate(%q, {}) = %v, want nil or *ValidationError", name, err)
			}
		})
	}
}

func TestSource(t *testing.T) {
	for _, name := range allNames {
		t.Run(name, func(t *testing.T) {
			b, err := schemas.Source(name)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Schema string `json:"$schema"`
				ID     string `json:"$id"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("Source(%q) is not JSON: %v", name, err)
			}
			if want := "https://schemas.agentbus.invalid/" + name + ".json"; doc.ID != want {
				t.Errorf("$id = %q, want %q", doc.ID, want)
			}
			if want := "https://json-schema.org/draft/2020-12/schema"; doc.Schema != want {
				t.Errorf("$schema = %q, want %q", doc.Schema, want)
			}
		})
	}
	for _, name := range []string{"nope", "", "plan.json", "../schemas/plan", "testdata/valid/plan/dag"} {
		if _, err := schemas.Source(name); !errors.Is(err, schemas.ErrUnknownSchema) {
			t.Errorf("Source(%q) = %v, want ErrUnknownSchema", name, err)
		}
	}
}

// durationPattern is a Go duration (time.ParseDuration) without a sign:
// the wait step's and the bulk filter's.
const durationPattern = `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`

// TestPatternsMatchSubjects keeps the id grammars in the schemas identical
// to the ones package subjects enforces on the wire.
func TestPatternsMatchSubjects(t *testing.T) {
	for _, name := range allNames {
		b, err := schemas.Source(name)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		walk(doc, func(key string, v any) {
			var patterns []string
			switch key {
			case "pattern":
				p, _ := v.(string)
				patterns = append(patterns, p)
			case "patternProperties":
				m, _ := v.(map[string]any)
				for p := range m {
					patterns = append(patterns, p)
				}
			case "propertyNames", "contentSchema":
				// jsonschema v6.0.3 reports these errors at an instance
				// location that later sibling validation overwrites
				// (santhosh-tekuri/jsonschema#258, #269), so pointers
				// would be wrong at random; use patternProperties with
				// additionalProperties: false instead.
				t.Errorf("%s: uses %q, whose error locations are unreliable", name, key)
			}
			for _, p := range patterns {
				if p != subjects.TokenPattern && p != subjects.StepPattern && p != base64Pattern && p != durationPattern {
					t.Errorf("%s: pattern %q is neither subjects.TokenPattern, subjects.StepPattern, base64 nor a duration", name, p)
				}
			}
		})
	}
}

// base64Pattern is standard base64 with padding, as encoding/json writes
// a []byte (the custom event's payload_base64).
const base64Pattern = "^[A-Za-z0-9+/]*={0,2}$"

func walk(v any, fn func(key string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			fn(k, c)
			walk(c, fn)
		}
	case []any:
		for _, c := range x {
			walk(c, fn)
		}
	}
}

// goldenFiles returns the documents under testdata/<dir>, keyed by
// "<schema>/<case>", where <schema> is the name of the directory.
func goldenFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	root := filepath.Join("testdata", dir)
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[strings.TrimSuffix(filepath.ToSlash(rel), ".json")] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no golden files under %s", root)
	}
	return out
}

func schemaOf(key string) string { return key[:strings.LastIndex(key, "/")] }

func TestValidGolden(t *testing.T) {
	files := goldenFiles(t, "valid")
	covered := map[string]bool{}
	for key, b := range files {
		name := schemaOf(key)
		covered[name] = true
		t.Run(key, func(t *testing.T) {
			if err := schemas.Validate(name, b); err != nil {
				t.Fatalf("Validate(%q, %s) = %v, want nil", name, b, err)
			}
		})
	}
	for _, n := range schemas.Names() {
		if !covered[n] {
			t.Errorf("no valid golden document for schema %q", n)
		}
	}
}

// invalidGolden lists, for each file under testdata/invalid, the pointer of
// every problem Validate must report, in order.
var invalidGolden = map[string][]string{
	"wait.input/bad-duration":                  {"/duration"},
	"wait.input/bad-on-timeout":                {"/on_timeout"},
	"wait.input/timeout-without-signal":        {"/signal"},
	"wait.input/two-kinds":                     {""},
	"bulk.request/bad-action":                  {"/action"},
	"bulk.request/bad-age-and-limit":           {"/filter/older_than", "/limit"},
	"bulk.request/bad-status":                  {"/filter/status/0"},
	"bulk.request/empty-filter":                {"/filter"},
	"control/signal-without-name":              {"/signal"},
	"workflow.request/empty-object":            {"/plan", "/query"},
	"workflow.request/metadata-only":           {"/plan", "/query"},
	"workflow.request/bad-step-id":             {"/plan/steps/0/id"},
	"workflow.request/depends-on-number":       {"/plan/steps/1/depends_on/0"},
	"workflow.request/depends-on-duplicate":    {"/plan/steps/1/depends_on"},
	"workflow.request/step-missing-capability": {"/plan/steps/0/capability"},
	"workflow.request/step-unknown-field":      {"/plan/steps/0/needs"},
	"workflow.request/no-steps":                {"/plan/steps"},
	"workflow.request/empty-query":             {"/query"},
	"workflow.request/bad-workflow-id":         {"/workflow_id"},
	"workflow.request/unknown-field":           {"/tenant"},
	"workflow.request/metadata-not-string":     {"/metadata/a~1b~0c"},
	"workflow.request/several-problems": {
		"/plan/steps/0/capability", "/plan/steps/0/id",
		"/plan/steps/1/depends_on/1", "/plan/steps/1/id",
	},
	"workflow.request/not-json":                  {""},
	"workflow.request/trailing-data":             {""},
	"workflow.request/empty-file":                {""},
	"workflow.request/not-object":                {""},
	"workflow.submitted/bad-capability":          {"/plan/steps/0/capability"},
	"workflow.submitted/workflow-id-not-allowed": {"/workflow_id"},
	"plan/missing-steps":                         {"/steps"},
	"plan/not-object":                            {""},
	"plan/steps-null":                            {"/steps"},
	"step.requested/attempt-zero":                {"/attempt"},
	"step.requested/bad-dependency-key":          {"/dependency_outputs/a.b"},
	"step.requested/missing-step-id":             {"/step_id"},
	"step.completed/missing-output":              {"/output"},
	"step.completed/attempt-fraction":            {"/attempt"},
	"step.failed/empty-error":                    {"/error"},
	"step.failed/retryable-string":               {"/retryable"},
	"step.running/attempt-zero":                  {"/attempt"},
	"control/unknown-action":                     {"/action"},
	"fork.request/revision-zero":                 {"/revision"},
	"control/missing-action":                     {"/action"},
	"status/unknown-state":                       {"/state"},
	"status/bad-step-id":                         {"/step_id"},
	"progress/bad-numbers":                       {"/completed_steps", "/percent", "/total_steps"},
	"complete/bad-output-key":                    {"/outputs/a~1b"},
	"complete/missing-result":                    {"/result"},
	"complete/negative-duration":                 {"/duration_ms"},
	"error/missing-message":                      {"/message"},
	"artifact/missing-data":                      {"/data"},
	"artifact/empty-id":                          {"/artifact_id"},
	"cancelled/reason-number":                    {"/reason"},
	"custom/both":                                {""},
	"custom/bad":                                 {"/extra", "/metadata/n", "/payload_base64"},
	"quotas/bad":                                 {"/acme/queued_steps", "/acme/running", "/acme/upload"},
	"quotas/bad-tenant":                          {"/Acme.x"},
	"tool_permissions/bad":                       {"/Acme.x", "/acme/client/allow", "/acme/client/confirm", "/acme/client/deny/0"},
	"retention/bad":                              {"/acme/completed", "/acme/kept"},
}

func TestInvalidGolden(t *testing.T) {
	files := goldenFiles(t, "invalid")
	for key, b := range files {
		if _, ok := invalidGolden[key]; ok {
			continue
		}
		// Agents' and the indexer's schemas keep their invalid goldens
		// without pinned pointers: each must still fail with a
		// *ValidationError.
		if !strings.HasPrefix(key, "agent.") && !strings.HasPrefix(key, "index.") {
			t.Errorf("testdata/invalid/%s.json has no entry in invalidGolden", key)
			continue
		}
		var ve *schemas.ValidationError
		if err := schemas.Validate(schemaOf(key), b); !errors.As(err, &ve) || len(ve.Problems) == 0 {
			t.Errorf("testdata/invalid/%s.json: Validate = %v, want a *ValidationError", key, err)
		}
	}
	for key, want := range invalidGolden {
		t.Run(key, func(t *testing.T) {
			b, ok := files[key]
			if !ok {
				t.Fatalf("testdata/invalid/%s.json is missing", key)
			}
			name := schemaOf(key)
			err := schemas.Validate(name, b)
			if err == nil {
				t.Fatalf("Validate(%q, %s) = nil, want problems at %q", name, b, want)
			}
			if !errors.Is(err, schemas.ErrInvalid) {
				t.Errorf("errors.Is(%v, ErrInvalid) = false", err)
			}
			if errors.Is(err, schemas.ErrUnknownSchema) {
				t.Errorf("errors.Is(%v, ErrUnknownSchema) = true", err)
			}
			var ve *schemas.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate(%q) = %T %v, want *ValidationError", name, err, err)
			}
			if ve.Schema != name {
				t.Errorf("ValidationError.Schema = %q, want %q", ve.Schema, name)
			}
			got := make([]string, len(ve.Problems))
			for i, p := range ve.Problems {
				got[i] = p.Pointer
				if p.Message == "" {
					t.Errorf("problem at %q has no message", p.Pointer)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("pointers = %q, want %q\nerror: %v", got, want, err)
			}
		})
	}
}

// TestProblemMessages pins the messages a client sees for the common
// mistakes, since the gateway returns them verbatim.
func TestProblemMessages(t *testing.T) {
	tests := []struct {
		name, schema, doc string
		want              schemas.Problem
	}{
		{
			name: "required", schema: "workflow.request", doc: `{}`,
			want: schemas.Problem{Pointer: "/query", Message: "required property is missing"},
		},
		{
			name: "pattern", schema: "plan", doc: `{"steps":[{"id":"a.b","capability":"x"}]}`,
			want: schemas.Problem{Pointer: "/steps/0/id", Message: "'a.b' does not match pattern '" + subjects.StepPattern + "'"},
		},
		{
			name: "type", schema: "plan", doc: `{"steps":[{"id":"a","capability":"x","depends_on":[1]}]}`,
			want: schemas.Problem{Pointer: "/steps/0/depends_on/0", Message: "got number, want string"},
		},
		{
			name: "additional property names the property", schema: "plan", doc: `{"steps":[{"id":"a","capability":"x","needs":[]}]}`,
			want: schemas.Problem{Pointer: "/steps/0/needs", Message: `property "needs" is not allowed here`},
		},
		{
			name: "bad key names the key", schema: "complete", doc: `{"result":1,"outputs":{"a b":1}}`,
			want: schemas.Problem{Pointer: "/outputs/a b", Message: `property "a b" is not allowed here`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := schemas.Validate(tt.schema, []byte(tt.doc))
			var ve *schemas.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want *ValidationError", err)
			}
			if !slices.Contains(ve.Problems, tt.want) {
				t.Fatalf("problems = %+v, want one to be %+v", ve.Problems, tt.want)
			}
		})
	}
}

// TestPointersAreStable validates documents whose bad value sits beside
// sibling properties many times over: map iteration order changes each
// time, and the reported pointer must not.
func TestPointersAreStable(t *testing.T) {
	tests := []struct{ schema, doc, want string }{
		{"step.requested", `{"step_id":"b","capability":"echo","attempt":1,"query":"q","input":{"x":1},"dependency_outputs":{"a.b":1,"c":2}}`, "/dependency_outputs/a.b"},
		{"complete", `{"result":{"a":1},"outputs":{"x":{"y":1},"a/b":1},"duration_ms":1}`, "/outputs/a~1b"},
		{"workflow.request", `{"workflow_id":"w","query":"q","metadata":{"a":"b","c":1,"d":"e"},"plan":{"steps":[{"id":"a","capability":"echo","input":{"deep":{"er":1}},"depends_on":["b"]},{"id":"b","capability":"echo"}]}}`, "/metadata/c"},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			for range 200 {
				err := schemas.Validate(tt.schema, []byte(tt.doc))
				var ve *schemas.ValidationError
				if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Pointer != tt.want {
					t.Fatalf("Validate = %v, want one problem at %q", err, tt.want)
				}
			}
		})
	}
}

func TestInvalidJSON(t *testing.T) {
	for _, doc := range []string{"", "{", `{"query":}`, "nul", `{"query":"x"}}`, "\xff"} {
		t.Run(fmt.Sprintf("%q", doc), func(t *testing.T) {
			err := schemas.Validate(schemas.WorkflowRequest, []byte(doc))
			var ve *schemas.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate(%q) = %v, want *ValidationError", doc, err)
			}
			if len(ve.Problems) != 1 || ve.Problems[0].Pointer != "" {
				t.Fatalf("problems = %+v, want one at \"\"", ve.Problems)
			}
			if !strings.HasPrefix(ve.Problems[0].Message, "not valid JSON: ") {
				t.Errorf("message = %q, want prefix %q", ve.Problems[0].Message, "not valid JSON: ")
			}
		})
	}
}

func TestUnknownSchema(t *testing.T) {
	for _, name := range []string{"nope", "", "plan.json", "Plan", "step"} {
		t.Run(name, func(t *testing.T) {
			err := schemas.Validate(name, []byte(`{}`))
			if !errors.Is(err, schemas.ErrUnknownSchema) {
				t.Fatalf("Validate(%q) = %v, want ErrUnknownSchema", name, err)
			}
			if errors.Is(err, schemas.ErrInvalid) {
				t.Errorf("Validate(%q) = %v also matches ErrInvalid", name, err)
			}
			var ve *schemas.ValidationError
			if errors.As(err, &ve) {
				t.Errorf("Validate(%q) returned a *ValidationError", name)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
				t.Errorf("error %q does not name the schema", err)
			}
		})
	}
}

func TestValidationErrorString(t *testing.T) {
	e := &schemas.ValidationError{Schema: "plan", Problems: []schemas.Problem{
		{Pointer: "", Message: "not valid JSON: EOF"},
		{Pointer: "/steps/0/id", Message: "bad"},
	}}
	want := "schemas: invalid plan: /: not valid JSON: EOF; /steps/0/id: bad"
	if got := e.Error(); got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, schemas.ErrInvalid) {
		t.Fatal("errors.Is(*ValidationError, ErrInvalid) = false")
	}
	wrapped := fmt.Errorf("gateway: %w", e)
	var ve *schemas.ValidationError
	if !errors.As(wrapped, &ve) || ve != e {
		t.Fatal("errors.As through fmt.Errorf %w failed")
	}
}

func TestProblemJSON(t *testing.T) {
	b, err := json.Marshal(schemas.Problem{Pointer: "/query", Message: "required property is missing"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"pointer":"/query","message":"required property is missing"}`; string(b) != want {
		t.Fatalf("json = %s, want %s", b, want)
	}
}

// TestValidateConcurrent runs Validate from many goroutines at once,
// sharing the compiled schemas and the message printer; run with -race.
func TestValidateConcurrent(t *testing.T) {
	valid := goldenFiles(t, "valid")
	invalid := goldenFiles(t, "invalid")
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(valid)+2*len(invalid))
	for range 2 {
		for key, b := range valid {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := schemas.Validate(schemaOf(key), b); err != nil {
					errs <- fmt.Errorf("valid %s: %w", key, err)
				}
			}()
		}
		for key, b := range invalid {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := schemas.Validate(schemaOf(key), b); !errors.Is(err, schemas.ErrInvalid) {
					errs <- fmt.Errorf("invalid %s: got %v", key, err)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func ExampleValidate() {
	err := schemas.Validate(schemas.WorkflowRequest, []byte(`{"plan":{"steps":[{"id":"a.b","capability":"echo"}]}}`))
	var ve *schemas.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			fmt.Println(p.Pointer)
		}
	}
	fmt.Println(errors.Is(err, schemas.ErrInvalid))
	// Output:
	// /plan/steps/0/id
	// true
}

func TestCompileValidatesWithPointers(t *testing.T) {
	s, err := schemas.Compile("add", []byte(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate([]byte(`{"a":1,"b":2}`)); err != nil {
		t.Fatalf("valid input: %v", err)
	}
	err = s.Validate([]byte(`{"a":"one"}`))
	var ve *schemas.ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 2 || ve.Problems[0].Pointer != "/a" || ve.Problems[1].Pointer != "/b" {
		t.Fatalf("invalid input: %v, want problems at /a and /b", err)
	}
	// A schema never reaches for a file or the network.
	if _, err := schemas.Compile("evil", []byte(`{"$ref":"file:///etc/passwd"}`)); !errors.Is(err, schemas.ErrBadSchema) {
		t.Fatalf("schema with a file $ref: %v, want ErrBadSchema", err)
	}
	if _, err := schemas.Compile("junk", []byte(`{"type":`)); !errors.Is(err, schemas.ErrBadSchema) {
		t.Fatalf("junk: %v, want ErrBadSchema", err)
	}
}
