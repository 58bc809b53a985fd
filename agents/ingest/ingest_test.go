package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/ingest"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
)

// progress records what a step reported.
type progress struct {
	mu  sync.Mutex
	msg []string
}

func (p *progress) Progress(_ context.Context, _ float64, m string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msg = append(p.msg, m)
	return nil
}

func (p *progress) Artifact(context.Context, string, string, any, bool, bool) error { return nil }

func setup(t *testing.T) (*bustest.Env, *embedded.Index, *ingest.Agent) {
	t.Helper()
	env := bustest.New(t)
	ix, err := embedded.Open(embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	a, err := ingest.New(ingest.Config{Bus: env.Bus, Store: ix})
	if err != nil {
		t.Fatal(err)
	}
	return env, ix, a
}

func run(t *testing.T, a *ingest.Agent, tenant string, in any, deps map[string]json.RawMessage) (ingest.Output, *progress, error) {
	t.Helper()
	raw, _ := json.Marshal(in)
	p := &progress{}
	out, err := a.Handle(context.Background(), agents.Request{TenantID: tenant, WorkflowID: "w", StepID: "ingest-1",
		Capability: ingest.Capability, Input: raw, DependencyOutputs: deps}, p)
	var o ingest.Output
	if err == nil {
		if err := json.Unmarshal(out, &o); err != nil {
			t.Fatal(err)
		}
	}
	return o, p, err
}

func TestUploadsAreIndexedOnceAndRedeliveryIsHarmless(t *testing.T) {
	env, ix, a := setup(t)
	ctx := context.Background()
	var in ingest.Input
	for i, body := range []string{"# One\n\nThe narwhal tusk is a tooth.", "# Two\n\nThe pangolin has scales."} {
		name, _ := bus.UploadName("acme", "up", i)
		n, err := env.Bus.PutUpload(ctx, name, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		in.Files = append(in.Files, ingest.File{Object: name, Name: []string{"one.md", "two.md"}[i], Size: n})
	}
	in.Upload = "up"
	a2, err := ingest.New(ingest.Config{Bus: env.Bus, Store: ix, KeepUploads: true})
	if err != nil {
		t.Fatal(err)
	}
	// The first delivery keeps the uploads (as a worker that died before
	// its reply would), the second indexes again: the same documents, once.
	for _, ag := range []*ingest.Agent{a2, a} {
		out, p, err := run(t, ag, "acme", in, nil)
		if err != nil || out.Documents != 2 || len(out.Problems) != 0 || len(p.msg) == 0 || !strings.HasPrefix(p.msg[len(p.msg)-1], "indexed 2 files") {
			t.Fatalf("Handle: %+v, progress %v, err %v", out, p.msg, err)
		}
	}
	page, err := ix.List(ctx, "acme", retrieval.ListOptions{})
	if err != nil || page.Total != 2 {
		t.Fatalf("List: %+v %v, want 2 documents", page, err)
	}
	if left, _ := env.Bus.ListUploads(ctx, "acme"); len(left) != 0 {
		t.Fatalf("uploads left after indexing: %v", left)
	}
	// A third delivery finds the uploads gone: problems, not a failure.
	out, _, err := run(t, a, "acme", in, nil)
	if err != nil || len(out.Problems) != 2 || out.Problems[0].Code != "missing" {
		t.Fatalf("after the uploads are gone: %+v %v", out, err)
	}
}

func TestAnotherTenantsUploadIsNotRead(t *testing.T) {
	env, _, a := setup(t)
	name, _ := bus.UploadName("beta", "up", 0)
	if _, err := env.Bus.PutUpload(context.Background(), name, strings.NewReader("# Secret\n\nbeta's secret")); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, a, "acme", ingest.Input{Upload: "up", Files: []ingest.File{{Object: name, Name: "secret.md"}}}, nil)
	if err != nil || out.Documents != 0 || len(out.Problems) != 1 || out.Problems[0].Code != "missing" {
		t.Fatalf("acme's step read beta's upload: %+v %v", out, err)
	}
}

func TestDocumentsFromDependencies(t *testing.T) {
	_, ix, a := setup(t)
	deps := map[string]json.RawMessage{
		"select": json.RawMessage(`{"documents":[{"id":"https://example.org/a","title":"A","text":"The capybara swims well.","metadata":{"url":"https://example.org/a"}},{"id":"","text":"no id"},{"id":"https://example.org/a","text":"again"}]}`),
	}
	out, _, err := run(t, a, "acme", ingest.Input{}, deps)
	if err != nil || out.Documents != 1 || len(out.Problems) != 2 {
		t.Fatalf("Handle: %+v %v", out, err)
	}
	hits, err := ix.Search(context.Background(), "acme", retrieval.ProfileBM25, retrieval.Query{Text: "capybara"})
	if err != nil || len(hits) != 1 || hits[0].Source != "https://example.org/a" {
		t.Fatalf("search: %+v %v", hits, err)
	}
	if _, _, err := run(t, a, "acme", ingest.Input{}, nil); err == nil || !strings.Contains(err.Error(), "no /files") {
		t.Fatalf("nothing to index: %v, want a permanent error saying so", err)
	}
	empty := map[string]json.RawMessage{"select": json.RawMessage(`{"documents":[],"dropped":[{"url":"x","reason":"blocked"}]}`)}
	if out, _, err := run(t, a, "acme", ingest.Input{}, empty); err != nil || out.Documents != 0 {
		t.Fatalf("a selection that kept nothing: %+v %v, want 0 documents and no error", out, err)
	}
}

func TestDocumentOperations(t *testing.T) {
	env, ix, a := setup(t)
	ctx := context.Background()
	svc, err := a.Serve(ctx, env.Bus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	if err := ix.Replace(ctx, "acme", "d1", []retrieval.Chunk{{ID: "d1#0", Text: "hello there"}}); err != nil {
		t.Fatal(err)
	}
	call := func(tenant, op, body string) ([]byte, error) {
		subj := "agentbus." + tenant + ".documents." + op
		return env.Bus.Call(ctx, subj, []byte(body))
	}
	if out, err := call("acme", ingest.OpGet, `{"id":"d1"}`); err != nil || !strings.Contains(string(out), `"chunks":1`) {
		t.Fatalf("get: %s %v", out, err)
	}
	var se *bus.ServiceError
	if _, err := call("beta", ingest.OpGet, `{"id":"d1"}`); !asServiceError(err, &se) || se.Code != 404 {
		t.Fatalf("beta read acme's document: %v", err)
	}
	if _, err := call("acme", ingest.OpGet, `{}`); !asServiceError(err, &se) || se.Code != 400 {
		t.Fatalf("get without id: %v", err)
	}
	if out, err := call("acme", ingest.OpDelete, `{"id":"d1"}`); err != nil || !strings.Contains(string(out), `"chunks":1`) {
		t.Fatalf("delete: %s %v", out, err)
	}
	if out, err := call("acme", ingest.OpList, `{}`); err != nil || !strings.Contains(string(out), `"total":0`) {
		t.Fatalf("list after delete: %s %v", out, err)
	}
}

func asServiceError(err error, se **bus.ServiceError) bool { return errors.As(err, se) }
