package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/internal/stacktest"
	"github.com/agentbus/agentbus/mcpserver"
)

// TestMCPStdio drives `agentbus mcp`, started as a process, with the MCP
// SDK's client over its stdin and stdout, as an assistant would: against a
// real stack's gateway with auth on, the token from AGENTBUS_TOKEN.
func TestMCPStdio(t *testing.T) {
	const token = "mcp-stdio-client-token"
	s := stacktest.Start(t, stacktest.Options{Gateway: true, Agents: []agents.Agent{sleep.Agent{}}, GatewayConfig: func(c *gateway.Config) {
		c.Auth.Tokens = []gateway.Token{{Token: token, Tenant: "acme", Role: gateway.RoleClient}}
	}})
	cmd := exec.Command(agentbusBinary(t), "mcp", "--url", "http://"+s.Addr)
	cmd.Env = append(cmd.Environ(), "AGENTBUS_TOKEN="+token)
	var mu sync.Mutex
	var progress []string
	c := mcp.NewClient(&mcp.Implementation{Name: "test-assistant", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, req.Params.Message)
		}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to agentbus mcp: %v", err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "submit") || !slices.Contains(names, "follow") || len(names) != 6 {
		t.Errorf("tools %v", names)
	}

	callTool := func(name string, args map[string]any, out any) {
		t.Helper()
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		p.SetProgressToken(name)
		res, err := cs.CallTool(ctx, p)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res.Content)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %s: %v", name, b, err)
		}
	}

	var done mcpserver.SubmitOutput
	callTool("submit", map[string]any{"wait": true, "plan": map[string]any{"steps": []any{
		map[string]any{"id": "a", "capability": "echo", "input": map[string]any{"say": "over stdio"}}}}}, &done)
	if done.TenantID != "acme" || done.Outcome == nil || done.Outcome.Status != "completed" {
		t.Fatalf("submit: %+v", done)
	}
	ans, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "agentbus://workflows/" + done.WorkflowID + "/answer"})
	if err != nil || len(ans.Contents) != 1 || !strings.Contains(ans.Contents[0].Text, "over stdio") {
		t.Errorf("answer resource: %v %+v", err, ans)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		got := slices.ContainsFunc(progress, func(m string) bool { return strings.HasPrefix(m, "completed in") })
		msgs := slices.Clone(progress)
		mu.Unlock()
		if got {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress notifications %q: no end", msgs)
		}
		time.Sleep(10 * time.Millisecond) // notifications are handled asynchronously; there is no event to wait on here
	}

	var nap mcpserver.SubmitOutput
	callTool("submit", map[string]any{"plan": map[string]any{"steps": []any{
		map[string]any{"id": "nap", "capability": "sleep", "input": map[string]any{"ms": 600000}}}}}, &nap)
	var ctl mcpserver.ControlOutput
	callTool("cancel", map[string]any{"workflow_id": nap.WorkflowID, "reason": "test"}, &ctl)
	var o mcpserver.Outcome
	callTool("follow", map[string]any{"workflow_id": nap.WorkflowID}, &o)
	if o.Status != "canceled" {
		t.Errorf("after cancel: %+v", o)
	}
	st, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "agentbus://workflows/" + nap.WorkflowID})
	if err != nil || !strings.Contains(st.Contents[0].Text, `"status": "canceled"`) {
		t.Errorf("state resource: %v %+v", err, st)
	}
}
