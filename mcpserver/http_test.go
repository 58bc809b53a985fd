package mcpserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/internal/stacktest"
	"github.com/agentbus/agentbus/mcpserver"
)

// bearer sends every request with a token.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// overHTTP connects a client to the gateway's /mcp with token.
func overHTTP(t *testing.T, s *stacktest.Stack, token string) (*mcp.ClientSession, *progress) {
	t.Helper()
	return connect(t, &mcp.StreamableClientTransport{Endpoint: "http://" + s.Addr + "/mcp", HTTPClient: &http.Client{Transport: bearer(token)}})
}

func TestGatewayMCP(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{Gateway: true, Agents: []agents.Agent{sleep.Agent{}}, GatewayConfig: func(c *gateway.Config) {
		c.Auth.Tokens = []gateway.Token{
			{Token: "acme-client-token-0001", Tenant: "acme", Role: gateway.RoleClient},
			{Token: "acme-viewer-token-0001", Tenant: "acme", Role: gateway.RoleViewer},
			{Token: "other-client-token-0001", Tenant: "other", Role: gateway.RoleClient},
		}
	}})

	t.Run("no token", func(t *testing.T) {
		for _, auth := range []string{"", "Bearer wrong"} {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+s.Addr+"/mcp",
				strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("POST /mcp with Authorization %q: %s, want 401", auth, resp.Status)
			}
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "anonymous", Version: "1"}, nil)
		if cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + s.Addr + "/mcp", MaxRetries: -1}, nil); err == nil {
			cs.Close()
			t.Error("an MCP client without a token connected")
		}
	})

	cs, prog := overHTTP(t, s, "acme-client-token-0001")
	exercise(t, cs, prog)

	t.Run("tenancy", func(t *testing.T) {
		var out mcpserver.SubmitOutput
		call(t, cs, "submit", map[string]any{"wait": true, "plan": map[string]any{"steps": []any{
			map[string]any{"id": "a", "capability": "echo", "input": "mine"}}}}, &out)
		if out.TenantID != "acme" {
			t.Errorf("submitted as tenant %q, want the token's acme", out.TenantID)
		}
		other, _ := overHTTP(t, s, "other-client-token-0001")
		if _, err := read(t, other, "agentbus://workflows/"+out.WorkflowID); err == nil {
			t.Error("another tenant's token read acme's workflow")
		}
		viewer, _ := overHTTP(t, s, "acme-viewer-token-0001")
		if _, err := read(t, viewer, "agentbus://workflows/"+out.WorkflowID+"/answer"); err != nil {
			t.Errorf("acme's viewer reading the answer: %v", err)
		}
		res := callRaw(t, viewer, "submit", map[string]any{"query": "hello"})
		if !res.IsError || !strings.Contains(text(res), "403") {
			t.Errorf("a viewer's submit: error %v %q, want a 403", res.IsError, text(res))
		}
	})
}
