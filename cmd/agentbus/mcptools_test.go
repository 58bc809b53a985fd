package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	abclient "github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/internal/stacktest"
)

// TestWorkerMCPServerFlag: `agentbus worker --mcp-server web=URL` serves
// the tools of an MCP server over streamable HTTP as capabilities that a
// plan runs, with the header from AGENTBUS_MCP_HEADERS_WEB.
func TestWorkerMCPServerFlag(t *testing.T) {
	type in struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "adder", Version: "v1 (not semver)"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "adds"}, func(_ context.Context, _ *mcp.CallToolRequest, v in) (*mcp.CallToolResult, map[string]int, error) {
		return nil, map[string]int{"sum": v.A + v.B}, nil
	})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	defer hs.Close()
	t.Setenv("AGENTBUS_MCP_HEADERS_WEB", "Authorization=Bearer%20s3cret")

	s := stacktest.Start(t, stacktest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wctx, stop := context.WithCancel(ctx)
	var errb bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		exited <- run(wctx, []string{"worker", "--nats", s.Env.URL, "--capabilities", "echo", "--heartbeat", "200ms",
			"--mcp-server", "web=" + hs.URL + "/mcp"}, &bytes.Buffer{}, &errb)
	}()
	c, err := abclient.NewNATS(s.Env.Bus, abclient.NATSConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for served := false; !served; {
		select {
		case code := <-exited:
			t.Fatalf("worker exited %d: %s", code, errb.String())
		case <-ctx.Done():
			t.Fatal("tool_web_add never registered")
		case <-tick.C:
		}
		list, err := c.Agents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		served = slices.ContainsFunc(list, func(i discovery.Instance) bool { return slices.Contains(i.Capabilities, "tool_web_add") })
	}
	plan := &events.Plan{Steps: []events.PlanStep{{ID: "sum", Capability: "tool_web_add", Input: json.RawMessage(`{"a":2,"b":3}`)}}}
	sub, err := c.Submit(ctx, abclient.Submission{Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Wait(ctx, sub.WorkflowID); err != nil || string(r.Result) != `{"sum":5}` {
		t.Fatalf("result %s, %v; want {\"sum\":5}", r.Result, err)
	}
	stop()
	if code := <-exited; code != 0 {
		t.Fatalf("worker exited %d after its context ended: %s", code, errb.String())
	}
}

// TestWorkerMCPServerFlagErrors: a bad --mcp-server is a usage error
// naming the flag and the spec; an unreachable server names the flag and
// the server.
func TestWorkerMCPServerFlagErrors(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{})
	for _, tc := range []struct {
		spec string
		code int
		says []string
	}{
		{"web", exitUsage, []string{"--mcp-server", `"web"`, "NAME=stdio:COMMAND"}},
		{"my_web=https://h/mcp", exitUsage, []string{"--mcp-server", "no '_'"}},
		{"gone=stdio:/nonexistent/mcp-server", exitUsage, []string{"--mcp-server gone", "connect"}},
	} {
		code, _, stderr := cli(t, "worker", "--nats", s.Env.URL, "--capabilities", "echo", "--mcp-server", tc.spec)
		for _, w := range tc.says {
			if !strings.Contains(stderr, w) {
				t.Errorf("--mcp-server %s: stderr %q does not say %q", tc.spec, stderr, w)
			}
		}
		if code != tc.code {
			t.Errorf("--mcp-server %s: exit %d, want %d (%s)", tc.spec, code, tc.code, stderr)
		}
	}
}
