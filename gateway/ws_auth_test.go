package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
	wsproto "github.com/agentbus/agentbus/gateway/ws"
)

// TestWSAuth: the handshake is authenticated like any request (401 before
// the upgrade); a browser's token rides as a subprotocol beside the real
// one, which the gateway selects; a viewer may watch but its control
// frames are refused.
func TestWSAuth(t *testing.T) {
	const client, viewer = "ws-client-0123456789abcdef", "ws-viewer-0123456789abcdef"
	s := startGateway(t, bustest.New(t), func(c *gateway.Config) {
		c.Auth.Tokens = []gateway.Token{
			{Token: client, Tenant: gateway.DefaultTenant, Role: gateway.RoleClient},
			{Token: viewer, Tenant: gateway.DefaultTenant, Role: gateway.RoleViewer},
		}
	})
	bareWorkflow(t, s.env, "guarded", "working")
	path := "/v1/workflows/guarded/ws"
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()

	if c, resp, err := s.dialWS(ctx, path); err == nil {
		_ = c.CloseNow()
		t.Fatal("upgraded without credentials")
	} else if resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without credentials: %v (%v), want 401", resp, err)
	}

	// A browser: the token as a subprotocol, offered beside the real one.
	c, _, err := s.dialWSWith(ctx, path, &websocket.DialOptions{Subprotocols: []string{wsproto.Subprotocol, gateway.BearerSubprotocol + client}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if c.Subprotocol() != wsproto.Subprotocol {
		t.Fatalf("subprotocol %q, want %q (and never the token)", c.Subprotocol(), wsproto.Subprotocol)
	}
	ws := newSession(t, c)
	ws.send(`{"type":"cancel"}`)
	// Past the role check: nobody answers on a bare stack.
	if r := controlResultOf(t, ws.await("control_result", ofType(wsproto.FrameControlResult))); r.Error != "unavailable" {
		t.Fatalf("client's cancel answered %+v, want error unavailable (no orchestrator)", r)
	}

	v := s.session(t, path+"?from=0", "Authorization", "Bearer "+viewer)
	v.await("connected", ofType(gateway.FrameConnected))
	v.send(`{"type":"approve"}`)
	if r := controlResultOf(t, v.await("control_result", ofType(wsproto.FrameControlResult))); r.Error != "forbidden" || r.Applied || !strings.Contains(r.Message, "approve") {
		t.Fatalf("viewer's approve answered %+v, want error forbidden", r)
	}
}
