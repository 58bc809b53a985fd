package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/subjects"
)

// agentsGateway is a real gateway (auth off) on a real server with no
// orchestrator: a registered sleep agent whose consumer exists but has no
// pull waiting (no slot), acme's steps queued at priorities 1 and 5 and
// one on the step subject, and beta's queued steps.
func agentsGateway(t *testing.T) string {
	t.Helper()
	env := bustest.New(t)
	ctx := t.Context()
	if err := env.Bus.EnsureQueue(ctx); err != nil {
		t.Fatal(err)
	}
	reg, err := discovery.New(ctx, env.Bus, llm.LocalEmbedder{Dim: 32})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	now := time.Now().UTC()
	if err := reg.Put(ctx, discovery.Registration{Instance: "sleep-1", Worker: "w", Name: "sleep", Version: "1.0.0",
		Capabilities: []string{"sleep"}, PID: os.Getpid(), StartedAt: now, HeartbeatAt: now, HeartbeatMS: time.Hour.Milliseconds(),
		SelfHealthy: true}, time.Hour); err != nil {
		t.Fatal(err)
	}
	durable, _ := subjects.StepConsumer("sleep")
	filter, _ := subjects.StepFilter("sleep")
	if err := env.Bus.EnsureConsumer(ctx, bus.ConsumeConfig{Stream: subjects.StreamSteps, Durable: durable, Filter: filter}); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"agentbus.acme.step.sleep", "agentbus.acme.queue.sleep.1", "agentbus.acme.queue.sleep.1",
		"agentbus.acme.queue.sleep.5", "agentbus.beta.queue.sleep.3"} {
		if _, err := env.Bus.JetStream().Publish(ctx, subj, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	gctx, cancel := context.WithCancel(context.Background())
	g, err := gateway.New(gctx, gateway.Config{Bus: env.Bus, Addr: "127.0.0.1:0", Registry: reg, Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	addr, err := g.Listen()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = g.Run(gctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return "http://" + addr.String()
}

// TestAgentsPrintsCapabilities: `agentbus agents` prints the instances,
// then a line per capability with the tenant's queued steps (split by
// priority), in flight, the oldest one's wait and whether throttled;
// --all-tenants a line per tenant; --json the capabilities too.
func TestAgentsPrintsCapabilities(t *testing.T) {
	url := agentsGateway(t)
	code, out, stderr := cli(t, "agents", "--url", url, "--tenant", "acme")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, re := range []string{
		`(?m)^AGENT\s+VERSION\s+CAPABILITIES\s+HEALTH\s+IN-FLIGHT`,
		`(?m)^sleep\s+1\.0\.0\s+sleep\s+healthy\s`,
		`(?m)^CAPABILITY\s+HEALTHY\s+SLOTS\s+IDLE\s+QUEUED\s+IN FLIGHT\s+OLDEST QUEUED\s+THROTTLED$`,
		`(?m)^sleep\s+1/1\s+0\s+0\s+3 \(p5:1 p1:2\)\s+1\s+\d+(\.\d+)?m?s\s+no$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output has no line matching %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "beta") {
		t.Errorf("acme's listing shows beta:\n%s", out)
	}

	code, out, stderr = cli(t, "agents", "--url", url, "--tenant", "acme", "--all-tenants")
	if code != 0 {
		t.Fatalf("--all-tenants: exit %d: %s", code, stderr)
	}
	for _, re := range []string{
		`(?m)^CAPABILITY\s+HEALTHY\s+SLOTS\s+IDLE\s+TENANT\s+QUEUED`,
		`(?m)^sleep\s+1/1\s+0\s+0\s+acme\s+3 \(p5:1 p1:2\)\s+1\s`,
		`(?m)^sleep\s+1/1\s+0\s+0\s+beta\s+1\s+0\s+\S+\s+no$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("--all-tenants output has no line matching %s:\n%s", re, out)
		}
	}

	code, out, stderr = cli(t, "agents", "--url", url, "--tenant", "acme", "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, stderr)
	}
	var got struct {
		Instances    []discovery.Instance `json:"instances"`
		Capabilities []gateway.Capability `json:"capabilities"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if len(got.Instances) != 1 || len(got.Capabilities) != 1 || got.Capabilities[0].Queued != 3 || got.Capabilities[0].InFlight != 1 {
		t.Errorf("--json: %s", out)
	}
}

// TestAgentsWithAnOlderGateway: a gateway without GET /v1/capabilities
// still gets its agents listed, with a warning; --all-tenants, asked for
// explicitly, fails.
func TestAgentsWithAnOlderGateway(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/agents" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"not_found","message":"no route"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"embedder":"e","instances":[{"instance":"echo-1","name":"echo","capabilities":["echo"],"health":"healthy"}]}`))
	}))
	t.Cleanup(srv.Close)
	code, out, stderr := cli(t, "agents", "--url", srv.URL)
	if code != 0 || !strings.Contains(out, "echo-1") || strings.Contains(out, "CAPABILITY") || !strings.Contains(stderr, "no capability counts") {
		t.Errorf("exit %d, stdout:\n%s\nstderr: %s", code, out, stderr)
	}
	if code, _, _ := cli(t, "agents", "--url", srv.URL, "--all-tenants"); code == 0 {
		t.Error("--all-tenants against a gateway without it: exit 0")
	}
}
