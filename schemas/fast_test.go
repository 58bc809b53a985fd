package schemas

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The schemas of the events a gateway decodes for every subscriber: each
// must have a fast path, or replays fall back to the slow validator
// without anyone noticing.
// So must a workflow's submission, which its orchestrator decodes as it
// starts it (the general validator took about 90 µs of a one-step
// workflow's CPU), and the plan it refers to.
var fastRequired = []string{"progress", "status", "artifact", "complete", "error", "cancelled", "deadline",
	"step.requested", "step.completed", "step.failed", "workflow.submitted", "plan"}

func TestFastPathCoversClientEvents(t *testing.T) {
	load()
	for _, n := range fastRequired {
		if _, ok := fast[n]; !ok {
			t.Errorf("schema %q has no fast path: a keyword outside fast.go's subset", n)
		}
	}
}

// slow is the general validator alone.
func slow(name string, data []byte) error {
	load()
	return validate(name, compiled[name], nil, false, data)
}

// agree checks the fast path's one promise on a document: it accepts
// only what the general validator accepts; and that Validate says what the
// general validator says.
func agree(t *testing.T, name string, data []byte) (fastAccepted bool) {
	t.Helper()
	f, ok := fast[name]
	if !ok {
		return false
	}
	want := slow(name, data)
	fastAccepted = json.Valid(data) && f.accepts(data)
	if fastAccepted && want != nil {
		t.Fatalf("%s: the fast path accepts %s, the validator says %v", name, data, want)
	}
	if got := Validate(name, data); (got == nil) != (want == nil) {
		t.Fatalf("%s: Validate(%s) = %v, the validator alone %v", name, data, got, want)
	}
	return fastAccepted
}

func goldenDocs(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	err := filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		out[filepath.ToSlash(path)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// goldenSchema is the schema a golden file is for:
// testdata/{valid,invalid}/<schema>/<file>.
func goldenSchema(path string) string { return strings.Split(path, "/")[2] }

func TestFastAgreesOnGolden(t *testing.T) {
	load()
	docs := goldenDocs(t)
	paths := make([]string, 0, len(docs))
	for p := range docs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		name := goldenSchema(p)
		accepted := agree(t, name, docs[p])
		if strings.HasPrefix(p, "testdata/valid/") && slices.Contains(fastRequired, name) && !accepted {
			t.Errorf("%s: the fast path declines a valid %s document", p, name)
		}
	}
}

// fastEdges are documents on the edges of the fast path: numbers at and
// around bounds, integers in other spellings, escapes, duplicates.
var fastEdges = []struct{ schema, doc string }{
	{"progress", `{"completed_steps":0,"total_steps":0,"percent":0}`},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":100}`},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":100.0}`},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":100.00000000000000001}`},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":1e2}`},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":1e-400}`},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":-0.0000000000000000000001}`},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":-0}`},
	{"progress", `{"completed_steps":1.0,"total_steps":2,"percent":5}`},
	{"progress", `{"completed_steps":1.5,"total_steps":2,"percent":5}`},
	{"progress", `{"completed_steps":-1,"total_steps":2,"percent":5}`},
	{"progress", `{"completed_steps":123456789012345678901234567890,"total_steps":2,"percent":5}`},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":5,"percent":500}`},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":500,"percent":5}`},
	{"progress", `{"completed_steps":1,"total_steps":2}`},
	{"progress", ` { "completed_steps" : 1 , "total_steps" : 2 , "percent" : 5 , "step_id" : "A-1" } `},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":5,"step_id":"\u0041"}`},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":5,"step_id":"A.B"}`},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":5,"message":"caf\u00e9 ☕ \"q\""}`},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":5,"extra":{"a":[1,"]}",{}]}}`},
	{"progress", `{"completed_steps":1,"total_steps":2,"percent":5} x`},
	{"progress", `[1]`},
	{"status", `{"state":"working"}`},
	{"status", `{"state":"Working"}`},
	{"status", `{"state":"work\u0069ng"}`},
	{"status", `{"state":null}`},
	{"status", `{"state":"working","trace_id":"0123456789abcdef0123456789abcdef"}`},
	{"status", `{"state":"working","trace_id":"0123456789abcdef0123456789abcdeé"}`},
	{"status", `{"state":"working","trace_id":"0123456789abcdef"}`},
	{"artifact", `{"artifact_id":"a","data":{"x":[true,false,null,-1.5e3,"s\\\"}"]}}`},
	{"artifact", `{"artifact_id":"","data":1}`},
	{"artifact", `{"artifact_id":"a","data":1,"append":"yes"}`},
	{"complete", `{"result":"done","outputs":{"A":1,"b_2":[2]}}`},
	{"complete", `{"result":"done","outputs":{"a.b":1}}`},
	{"complete", `{"result":"done","outputs":{},"usage":{"prompt_tokens":1,"models":{"m":2}}}`},
	{"complete", `{"result":"done","outputs":{},"usage":{"models":{"m":-2}}}`},
	{"complete", `{"result":"done","outputs":{},"usage":{"other":1}}`},
	{"complete", `{"result":"done","outputs":{},"steps":{"A":{"run_ms":1.5}}}`},
	// anyOf of required alternatives, $ref to plan.json, uniqueItems,
	// maxProperties, dependentRequired, dependentSchemas.
	{"workflow.submitted", `{}`},
	{"workflow.submitted", `{"metadata":{"a":"b"}}`},
	{"workflow.submitted", `{"query":"q","plan":{"steps":[]}}`},
	{"workflow.submitted", `{"fork":{"workflow_id":"w","revision":1}}`},
	{"workflow.submitted", `{"plan":{"steps":[{"id":"a","capability":"echo"},{"id":"b","capability":"echo","depends_on":["a"]}]}}`},
	{"workflow.submitted", `{"plan":{"steps":[{"id":"a","capability":"echo"},{"id":"b","capability":"echo","depends_on":["a","a"]}]}}`},
	{"workflow.submitted", `{"plan":{"steps":[{"id":"a","capability":"echo"},{"id":"b","capability":"echo","depends_on":["a","\u0061"]}]}}`},
	{"workflow.submitted", `{"plan":{"steps":[{"id":"a","capability":"echo"},{"id":"b","capability":"echo","depends_on":["a","b","c"]}]}}`},
	{"workflow.submitted", `{"plan":{"steps":[{"id":"a","capability":"Echo"}]}}`},
	{"workflow.submitted", `{"plan":{"steps":[{"id":"a"}]}}`},
	{"workflow.submitted", `{"plan":"x"}`},
	{"workflow.submitted", `{"query":"q","double_text":"enqueue"}`},
	{"workflow.submitted", `{"query":"q","double_text":"enqueue","session_id":"s"}`},
	{"workflow.submitted", `{"query":"q","double_text":"enqueue","session_id":"s","concurrency":{"key":"k"}}`},
	{"workflow.submitted", `{"query":"q","session_id":"s","concurrency":{"key":"k"}}`},
	{"workflow.submitted", `{"query":"q","double_text":"enqueue","double_text":"reject","session_id":"s"}`},
	{"workflow.submitted", `{"query":"q","metadata":{` + manyProps(64) + `}}`},
	{"workflow.submitted", `{"query":"q","metadata":{` + manyProps(65) + `}}`},
	{"workflow.submitted", `{"query":"q","metadata":{` + manyProps(64) + `,"k0":"again"}}`},
}

// manyProps is n string properties, "k0":"v" … .
func manyProps(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":"v"`, i)
	}
	return b.String()
}

func TestFastEdges(t *testing.T) {
	load()
	for _, c := range fastEdges {
		agree(t, c.schema, []byte(c.doc))
	}
}

// FuzzFastAgrees: on any document and any schema, the fast path accepts
// only what the general validator accepts.
func FuzzFastAgrees(f *testing.F) {
	load()
	names := make([]string, 0, len(fast))
	for n := range fast {
		names = append(names, n)
	}
	sort.Strings(names)
	index := func(name string) uint8 {
		for i, n := range names {
			if n == name {
				return uint8(i)
			}
		}
		return 0
	}
	for p, b := range goldenDocs(f) {
		f.Add(index(goldenSchema(p)), b)
	}
	for _, c := range fastEdges {
		f.Add(index(c.schema), []byte(c.doc))
	}
	f.Fuzz(func(t *testing.T, i uint8, data []byte) {
		agree(t, names[int(i)%len(names)], data)
	})
}

func BenchmarkValidateProgress(b *testing.B) {
	load()
	doc := []byte(`{"completed_steps":4242,"total_steps":100000,"percent":4.242,"message":"step done"}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := Validate("progress", doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := slow("progress", doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The keywords a submission needs beyond the event schemas' (anyOf,
// $ref, uniqueItems, maxProperties, dependentRequired,
// dependentSchemas): the fast path accepts the valid documents, declines
// the others, and the general validator agrees on each.
func TestFastSubmissionKeywords(t *testing.T) {
	load()
	for _, c := range []struct {
		doc   string
		valid bool
	}{
		{`{"plan":{"steps":[{"id":"a","capability":"echo"},{"id":"b","capability":"echo","depends_on":["a"]}]}}`, true},
		{`{"query":"q","plan":{"steps":[{"id":"a","capability":"echo"}]}}`, true},
		{`{"query":"q","plan":{"steps":[]}}`, false}, // plan.json: minItems
		{`{"fork":{"workflow_id":"w","revision":1}}`, true},
		{`{"query":"q","double_text":"enqueue","session_id":"s"}`, true},
		{`{"query":"q","session_id":"s","concurrency":{"key":"k"}}`, true},
		{`{"query":"q","metadata":{` + manyProps(64) + `}}`, true},
		{`{}`, false},                     // anyOf: none of query, plan, fork
		{`{"metadata":{"a":"b"}}`, false}, // the same
		{`{"plan":{"steps":[{"id":"a","capability":"echo"},{"id":"b","capability":"echo","depends_on":["a","a"]}]}}`, false},
		{`{"plan":{"steps":[{"id":"a","capability":"echo"},{"id":"b","capability":"echo","depends_on":["a","\u0061"]}]}}`, false},
		{`{"plan":{"steps":[{"id":"a"}]}}`, false}, // plan.json: capability required
		{`{"plan":"x"}`, false},
		{`{"query":"q","double_text":"enqueue"}`, false}, // dependentRequired: session_id
		{`{"query":"q","double_text":"enqueue","session_id":"s","concurrency":{"key":"k"}}`, false}, // dependentSchemas
		{`{"query":"q","metadata":{` + manyProps(65) + `}}`, false},                                 // maxProperties
	} {
		fastOK := agree(t, "workflow.submitted", []byte(c.doc))
		if c.valid != (slow("workflow.submitted", []byte(c.doc)) == nil) {
			t.Errorf("%s: the validator says valid %v, the test %v", c.doc, !c.valid, c.valid)
		}
		if fastOK != c.valid {
			t.Errorf("%s: the fast path accepts %v, want %v", c.doc, fastOK, c.valid)
		}
	}
}

func BenchmarkValidateSubmission(b *testing.B) {
	load()
	// What an orchestrator decodes as it starts a workflow
	// (workflow.submitted), and what the gateway checks a POST
	// /v1/workflows body against (workflow.request).
	for _, c := range []struct{ schema, doc string }{
		{"workflow.submitted", `{"query":"q","plan":{"steps":[{"id":"A","capability":"echo","input":{"x":"a"}},{"id":"B","capability":"echo","depends_on":["A"]}]},"metadata":{"batch":"b7"},"user":"u1","role":"client"}`},
		{"workflow.request", `{"workflow_id":"w1","query":"q","plan":{"steps":[{"id":"A","capability":"echo","input":{"x":"a"}},{"id":"B","capability":"echo","depends_on":["A"]}]},"metadata":{"batch":"b7"}}`},
	} {
		doc := []byte(c.doc)
		b.Run(c.schema+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Validate(c.schema, doc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.schema+"/general", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := slow(c.schema, doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
