package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/llm"
)

// TestA2AAgentFlagErrors: a bad --a2a-agent is refused when the flags are
// parsed, before anything connects, naming what is wrong.
func TestA2AAgentFlagErrors(t *testing.T) {
	for _, c := range []struct{ arg, says string }{
		{"agents.example.com", "want an http:// or https:// URL"},
		{"https://user:pw@agents.example.com", "credentials in the URL"},
		{"https://agents.example.com;header=Authorization:Bearer abc", "header=NAME:env:VARIABLE"},
		{"https://agents.example.com;header=X-Key:env:bad-name", "not an environment variable name"},
		{"https://agents.example.com;prefix=Ext", `prefix "Ext"`},
		{"https://agents.example.com;retries=3", `unknown option "retries=3"`},
	} {
		t.Run(c.arg, func(t *testing.T) {
			code, _, stderr := cli(t, "worker", "--nats", "nats://127.0.0.1:1", "--a2a-agent", c.arg)
			if code != exitUsage || !strings.Contains(stderr, `for "--a2a-agent" flag`) || !strings.Contains(stderr, c.says) {
				t.Fatalf("exit %d, %q; want a usage error saying %q", code, stderr, c.says)
			}
		})
	}
}

// TestWorkerServesA2AAgent: `agentbus worker` serves a remote agent's
// skills (taken from --a2a-agents, its token from the environment), and
// refuses one whose skill takes a capability the worker serves already,
// or a file that is not a list of agents.
func TestWorkerServesA2AAgent(t *testing.T) {
	env := bustest.New(t)
	url := startEchoA2A(t)
	t.Setenv("A2A_TEST_TOKEN", "Bearer t0k")
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	code, _, stderr := cli(t, "worker", "--nats", env.URL, "--capabilities", "echo", "--a2a-agent", url+";header=Authorization:env:A2A_TEST_TOKEN")
	if code != exitUsage || !strings.Contains(stderr, `makes capability "echo", which the built-in agent "echo" serves already`) || !strings.Contains(stderr, ";prefix=") {
		t.Fatalf("collision: exit %d, %q", code, stderr)
	}
	code, _, stderr = cli(t, "worker", "--nats", env.URL, "--capabilities", "echo", "--a2a-agents", file("bad.json", `[{"url": "https://a", "headers": {}}]`))
	if code != exitUsage || !strings.Contains(stderr, "--a2a-agents") || !strings.Contains(stderr, `unknown field "headers"`) {
		t.Fatalf("bad file: exit %d, %q", code, stderr)
	}
	code, _, stderr = cli(t, "worker", "--nats", env.URL, "--capabilities", "echo", "--a2a-agent", url)
	if code != exitFailed || !strings.Contains(stderr, "did not answer") || !strings.Contains(stderr, "401") {
		t.Fatalf("no token: exit %d, %q", code, stderr)
	}

	good := file("agents.json", `[{"url": "`+url+`", "prefix": "ext_", "headers_env": {"Authorization": "A2A_TEST_TOKEN"}}]`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- run(ctx, []string{"worker", "--nats", env.URL, "--capabilities=", "--a2a-agents", good, "--heartbeat", "200ms", "--log-level", "error"}, &out, &errb)
	}()
	defer func() {
		cancel()
		if code := <-done; code != exitCompleted {
			t.Errorf("worker exited %d: %s", code, errb.String())
		}
	}()
	reg, err := discovery.New(ctx, env.Bus, llm.LocalEmbedder{})
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(30 * time.Second)
	for {
		var caps []string
		list, err := reg.List(ctx)
		for _, in := range list {
			if in.Health == discovery.Healthy {
				caps = append(caps, in.Capabilities...)
			}
		}
		slices.Sort(caps)
		if err == nil && slices.Equal(caps, []string{"ext_echo", "ext_lookup_docs"}) {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("worker exited %d: %s", code, errb.String())
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("registry serves %v (%v), want ext_echo and ext_lookup_docs healthy", caps, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startEchoA2A serves an A2A agent with skills "echo" and "lookup.docs"
// that answers every message with a message, and wants the token
// "Bearer t0k"; it returns its base URL.
func startEchoA2A(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0k" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	card := &a2a.AgentCard{Name: "Echo", Description: "Answers.", URL: srv.URL + "/rpc", PreferredTransport: a2a.TransportProtocolJSONRPC,
		ProtocolVersion: "0.3.0", Version: "0.1.0", DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "Echoes."}, {ID: "lookup.docs", Name: "Docs", Description: "Finds docs."}}}
	mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(echoExecutor{})))
	mux.Handle("/.well-known/agent-card.json", a2asrv.NewStaticAgentCardHandler(card))
	return srv.URL
}

// echoExecutor answers a message with its text.
type echoExecutor struct{}

func (echoExecutor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	return q.Write(ctx, a2a.NewMessage(a2a.MessageRoleAgent, rc.Message.Parts...))
}

func (echoExecutor) Cancel(context.Context, *a2asrv.RequestContext, eventqueue.Queue) error {
	return nil
}
