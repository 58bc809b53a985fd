package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/internal/stacktest"
)

// blobAgent serves "blob": its output is a JSON string of input.size
// bytes in all (quotes included) of a pattern seeded by input.seed, and
// it publishes a 1 MiB artifact of the same kind.
type blobAgent struct{}

func (blobAgent) Card() agents.Card {
	return agents.Card{Name: "blob", Version: "1.0.0", Capabilities: []string{"blob"}, Description: "returns a large JSON string"}
}

func (blobAgent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	var in struct {
		Size int    `json:"size"`
		Seed uint64 `json:"seed"`
	}
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return nil, err
	}
	if err := emit.Artifact(ctx, req.StepID+"-sample", "sample", blob(1<<20, in.Seed+1), false, true); err != nil {
		return nil, err
	}
	return blob(in.Size, in.Seed), nil
}

// blob is a JSON string of n bytes, quotes included.
func blob(n int, seed uint64) json.RawMessage {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	const hexdigits = "0123456789abcdef"
	for i := range b {
		b[i] = hexdigits[r.IntN(16)]
	}
	b[0], b[n-1] = '"', '"'
	return b
}

// passAgent serves "pass": it returns the output of its one dependency
// as it received it, and records what it saw.
type passAgent struct {
	mu   sync.Mutex
	seen map[string]string // workflow → sha256 of the dependency output
}

func (*passAgent) Card() agents.Card {
	return agents.Card{Name: "pass", Version: "1.0.0", Capabilities: []string{"pass"}, Description: "returns its dependency's output"}
}

func (p *passAgent) Handle(_ context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
	for _, out := range req.DependencyOutputs {
		p.mu.Lock()
		p.seen[req.WorkflowID] = digest(out)
		p.mu.Unlock()
		return out, nil
	}
	return nil, errors.New("pass: no dependency")
}

func (p *passAgent) saw(workflow string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[workflow]
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func blobPlan(size int, seed uint64) *events.Plan {
	in, _ := json.Marshal(map[string]any{"size": size, "seed": seed})
	return &events.Plan{Steps: []events.PlanStep{
		{ID: "make", Capability: "blob", Input: in},
		{ID: "copy", Capability: "pass", DependsOn: []string{"make"}},
	}}
}

func startPayloadStack(t *testing.T) (*stack, *passAgent) {
	t.Helper()
	pass := &passAgent{seen: map[string]string{}}
	s := &stack{stacktest.Start(t, stacktest.Options{Agents: []agents.Agent{blobAgent{}, pass}, Gateway: true})}
	return s, pass
}

// A 50 MB output, fifty times NATS's message limit, goes from a worker
// through the orchestrator to the next step as its dependency output
// and to the Go SDK as the result, over HTTP and over NATS, unchanged;
// the checkpoint, the complete event and the step's artifact carry only
// its reference, and the gateway streams it for download.
func TestPayloadFiftyMegabytes(t *testing.T) {
	s, pass := startPayloadStack(t)
	c := s.client(t)
	ctx := timeout(t)
	const size = 50 << 20
	want := digest(blob(size, 7))
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "big", Plan: blobPlan(size, 7)}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Wait(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	ref, ok := client.ParseRef(res.Result)
	if !ok || ref.Size != size || ref.SHA256 != want || ref.ContentType != "application/json" {
		t.Fatalf("result %s: want a reference to %d bytes with sha256 %s", res.Result, size, want)
	}
	if !strings.HasPrefix(ref.Key, "default/big/copy/1/output-") {
		t.Errorf("key %s", ref.Key)
	}
	if got := pass.saw("big"); got != want {
		t.Fatalf("the dependent step saw sha256 %s, want %s (the payload, not its reference)", got, want)
	}
	resolved, err := c.ResolveResult(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	if digest(resolved.Result) != want || digest(resolved.Outputs["make"]) != want || digest(resolved.Outputs["copy"]) != want {
		t.Fatalf("resolved result: %d bytes, sha256 %s, want %s", len(resolved.Result), digest(resolved.Result), want)
	}
	// The checkpoint holds references, not 50 MB.
	st, err := c.State(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	for id, task := range st.Tasks {
		if _, ok := client.ParseRef(task.Output); !ok || len(task.Output) > events.MaxRefLen {
			t.Errorf("task %s output in the checkpoint: %.200s", id, task.Output)
		}
	}
	// The events carry references: the step's output artifact and the
	// blob agent's 1 MiB artifact.
	refs := 0
	for f, err := range c.Follow(ctx, "big", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Data) > 64<<10 {
			t.Errorf("%s frame of %d bytes", f.Type, len(f.Data))
		}
		if f.Type == "artifact" || f.Type == "status" {
			var a events.Artifact
			if f.Type == "status" { // a completed step's output comes with its status
				var s events.Status
				if err := json.Unmarshal(f.Data, &s); err != nil {
					t.Fatal(err)
				}
				if s.Artifact == nil {
					continue
				}
				a = *s.Artifact
			} else if err := json.Unmarshal(f.Data, &a); err != nil {
				t.Fatal(err)
			}
			if r, ok := client.ParseRef(a.Data); ok {
				refs++
				if a.ArtifactID == "make-sample" && (r.Size != 1<<20 || r.SHA256 != digest(blob(1<<20, 8))) {
					t.Errorf("sample artifact %s", a.Data)
				}
			}
		}
		if f.Type == "complete" {
			break
		}
	}
	if refs != 3 {
		t.Errorf("%d artifacts were references, want 3 (two step outputs, one sample)", refs)
	}
	// The gateway streams it, for the tenant only.
	path := "/v1/workflows/big/payloads/" + strings.TrimPrefix(ref.Key, "default/big/")
	resp, err := c.Do(ctx, http.MethodGet, path+"?download=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || n != size || hex.EncodeToString(h.Sum(nil)) != want ||
		resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("GET %s: %d, %d bytes, %v, headers %v", path, resp.StatusCode, n, err, resp.Header)
	}
	other, err := client.New(client.Config{URL: s.URL(), Tenant: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := other.Do(ctx, http.MethodGet, path, nil); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another tenant's GET: %v %v", resp.Status, err)
	}
	if _, err := other.Resolve(ctx, res.Result); !errors.Is(err, client.ErrPayload) {
		t.Fatalf("another tenant resolves: %v", err)
	}
	// A NATS client resolves it from the object store.
	nc, err := client.NewNATS(s.Env.Bus, client.NATSConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := nc.Resolve(ctx, res.Result)
	if err != nil || digest(got) != want {
		t.Fatalf("NATS client: %d bytes, %v", len(got), err)
	}
}

// Data under the threshold travels inline, byte for byte.
func TestPayloadSmallInline(t *testing.T) {
	s, _ := startPayloadStack(t)
	c := s.client(t)
	ctx := timeout(t)
	size := 64 << 10
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "small", Plan: blobPlan(size, 3)}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Wait(ctx, "small")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := client.ParseRef(res.Result); ok || !bytes.Equal(res.Result, blob(size, 3)) {
		t.Fatalf("result of %d bytes is not the output inline", len(res.Result))
	}
	if got, err := c.Resolve(ctx, res.Result); err != nil || !bytes.Equal(got, res.Result) {
		t.Fatalf("Resolve changed an inline value: %v", err)
	}
}

// Outputs at the threshold travel inline from the worker, but the
// orchestrator's copies of them (task, result, artifact, request,
// complete event) would make the checkpoint larger than a message: it
// moves them to the payloads store, and the workflow completes with the
// same bytes.
func TestPayloadCheckpointFits(t *testing.T) {
	s, pass := startPayloadStack(t)
	c := s.client(t)
	ctx := timeout(t)
	size := 256 << 10
	want := digest(blob(size, 5))
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "fits", Plan: blobPlan(size, 5)}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Wait(ctx, "fits")
	if err != nil {
		t.Fatal(err)
	}
	if got := pass.saw("fits"); got != want {
		t.Fatalf("the dependent step saw sha256 %s, want %s", got, want)
	}
	resolved, err := c.ResolveResult(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	if digest(resolved.Result) != want || digest(resolved.Outputs["make"]) != want {
		t.Fatalf("resolved result of %d bytes: sha256 %s, want %s", len(resolved.Result), digest(resolved.Result), want)
	}
}

// A reference to a payload that is not there fails its step with a
// reason that says so, and Resolve returns ErrPayload; nothing panics.
func TestPayloadMissing(t *testing.T) {
	s, _ := startPayloadStack(t)
	c := s.client(t)
	ctx := timeout(t)
	missing := events.PayloadRef{Bucket: "AGENTBUS_PAYLOADS", Key: "default/gone/make/1/output-0123456789abcdef",
		Size: 1 << 20, SHA256: strings.Repeat("ab", 32), ContentType: "application/json"}
	plan := &events.Plan{Steps: []events.PlanStep{{ID: "e", Capability: "echo", Input: missing.JSON()}}}
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "gone", Plan: plan}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Wait(ctx, "gone")
	var we *client.WorkflowError
	if !errors.As(err, &we) || !strings.Contains(we.Message, "is gone") || !strings.Contains(we.Message, missing.Key) {
		t.Fatalf("wait: %v", err)
	}
	if _, err := c.Resolve(ctx, missing.JSON()); !errors.Is(err, client.ErrPayload) {
		t.Fatalf("resolve: %v", err)
	}
	bad := json.RawMessage(`{"$agentbus_ref": {"key": 3}}`)
	if _, err := c.Resolve(ctx, bad); !errors.Is(err, client.ErrPayload) {
		t.Fatalf("resolve %s: %v", bad, err)
	}
}
