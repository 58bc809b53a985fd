package gateway

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

const (
	tokAcme   = "acme-client-0123456789abcdef"
	tokViewer = "acme-viewer-0123456789abcdef"
	tokAdmin  = "ops-admin-0123456789abcdef"
)

// probeGateway is a Gateway with only the auth and metrics middleware and
// probe routes that answer "TENANT MAYCONTROL"; it needs no NATS.
func probeGateway(t *testing.T, tokens []Token) (*Gateway, *bytes.Buffer) {
	t.Helper()
	cfg := Config{Auth: AuthConfig{Tokens: tokens}}
	cfg.Auth.setDefaults()
	if err := cfg.Auth.Validate(); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	g := &Gateway{cfg: cfg, log: slog.New(slog.NewTextHandler(&logs, nil)), mux: http.NewServeMux()}
	var err error
	if g.writes, err = newWriteProtection(cfg.CORS, cfg.Auth.mw.on()); err != nil {
		t.Fatal(err)
	}
	probe := func(w http.ResponseWriter, r *http.Request) {
		tenant, ok := g.tenant(w, r)
		if !ok {
			return
		}
		fmt.Fprintf(w, "%s %v", tenant, g.mayControl(r))
	}
	g.mux.HandleFunc("/probe", probe)
	g.mux.HandleFunc("GET /v1/workflows/{id}/ws", func(w http.ResponseWriter, r *http.Request) {
		tenant, ok := g.tenant(w, r)
		if !ok {
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"agentbus.v1"}})
		if err != nil {
			return
		}
		defer c.CloseNow()
		_ = c.Write(r.Context(), websocket.MessageText, []byte(tenant))
		_, _, _ = c.Read(r.Context()) // until the client closes
	})
	g.routesAuth()
	return g, &logs
}

var probeTokens = []Token{
	{Token: tokAcme, Tenant: "acme", Role: RoleClient},
	{Token: tokViewer, Tenant: "acme", Role: RoleViewer},
	{Token: tokAdmin, Tenant: "ops", Role: RoleAdmin},
}

func TestWrapCarriersAndRoles(t *testing.T) {
	g, logs := probeGateway(t, probeTokens)
	h := g.Handler()
	cases := []struct {
		name, method string
		header       []string
		status       int
		body         string // the probe's answer, or a fragment of the error
	}{
		{"bearer", "GET", []string{"Authorization", "Bearer " + tokAcme}, 200, "acme true"},
		{"bearer any case", "POST", []string{"Authorization", "bEARER  " + tokAcme}, 200, "acme true"},
		{"subprotocol", "GET", []string{"Sec-WebSocket-Protocol", "agentbus.v1, agentbus.bearer." + tokAcme}, 200, "acme true"},
		{"cookie", "GET", []string{"Cookie", "a=b; agentbus_token=" + tokAcme}, 200, "acme true"},
		{"cookie same-origin POST", "POST", []string{"Cookie", "agentbus_token=" + tokAcme, "Sec-Fetch-Site", "same-origin"}, 200, "acme true"},
		{"cookie cross-site POST", "POST", []string{"Cookie", "agentbus_token=" + tokAcme, "Sec-Fetch-Site", "cross-site"}, 403, "cross-origin"},
		{"cookie foreign origin POST", "POST", []string{"Cookie", "agentbus_token=" + tokAcme, "Origin", "https://evil.example"}, 403, "cross-origin"},
		// A cookie read cross-site is refused too: a page could open a
		// workflow's events with the user's cookie.
		{"cookie cross-site GET", "GET", []string{"Cookie", "agentbus_token=" + tokAcme, "Sec-Fetch-Site", "cross-site"}, 403, "cross-origin"},
		{"cookie same-site GET", "GET", []string{"Cookie", "agentbus_token=" + tokAcme, "Sec-Fetch-Site", "same-site"}, 403, "cross-origin"},
		{"cookie foreign origin GET", "GET", []string{"Cookie", "agentbus_token=" + tokAcme, "Origin", "https://evil.example"}, 403, "cross-origin"},
		{"cookie same-origin GET", "GET", []string{"Cookie", "agentbus_token=" + tokAcme, "Sec-Fetch-Site", "same-origin", "Origin", "http://gw.example"}, 200, "acme true"},
		{"bearer cross-site GET", "GET", []string{"Authorization", "Bearer " + tokAcme, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}, 200, "acme true"},
		{"header first", "GET", []string{"Authorization", "Bearer nope-nope-nope-nope", "Cookie", "agentbus_token=" + tokAcme}, 401, "unknown token"},
		{"not bearer", "GET", []string{"Authorization", "Token " + tokAcme}, 401, `want \"Bearer`},
		{"missing", "GET", nil, 401, "no credentials"},
		{"unknown", "GET", []string{"Authorization", "Bearer " + tokAcme + "x"}, 401, "unknown token"},
		{"prefix of a token", "GET", []string{"Authorization", "Bearer " + tokAcme[:20]}, 401, "unknown token"},
		{"client header ignored", "GET", []string{"Authorization", "Bearer " + tokAcme, TenantHeader, "globex"}, 200, "acme true"},
		{"viewer GET", "GET", []string{"Authorization", "Bearer " + tokViewer}, 200, "acme false"},
		{"viewer HEAD", "HEAD", []string{"Authorization", "Bearer " + tokViewer}, 200, ""},
		{"viewer POST", "POST", []string{"Authorization", "Bearer " + tokViewer}, 403, "read-only"},
		{"viewer DELETE", "DELETE", []string{"Authorization", "Bearer " + tokViewer}, 403, "read-only"},
		{"admin own", "GET", []string{"Authorization", "Bearer " + tokAdmin}, 200, "ops true"},
		{"admin picks", "POST", []string{"Authorization", "Bearer " + tokAdmin, TenantHeader, "globex"}, 200, "globex true"},
		{"admin bad tenant", "GET", []string{"Authorization", "Bearer " + tokAdmin, TenantHeader, "a.b"}, 400, "invalid_tenant"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, "http://gw.example/probe", nil)
			for i := 0; i+1 < len(c.header); i += 2 {
				r.Header.Add(c.header[i], c.header[i+1])
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.status || !strings.Contains(w.Body.String(), c.body) {
				t.Fatalf("%d %s, want %d containing %q", w.Code, w.Body, c.status, c.body)
			}
			if c.status == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer realm=") {
				t.Errorf("401 without a Bearer challenge: %q", w.Header().Get("WWW-Authenticate"))
			}
			if c.status >= 400 && strings.Contains(w.Body.String(), tokAcme[:20]) {
				t.Errorf("the answer echoes the token: %s", w.Body)
			}
		})
	}
	if strings.Contains(logs.String(), "0123456789abcdef") {
		t.Errorf("a token was logged:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "auth is on") {
		t.Errorf("no startup line saying auth is on:\n%s", logs)
	}
}

func TestTenantFailsClosedWithoutWrap(t *testing.T) {
	g, _ := probeGateway(t, probeTokens)
	w := httptest.NewRecorder()
	g.mux.ServeHTTP(w, httptest.NewRequest("GET", "/probe", nil)) // no wrap
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("%d %s, want 401", w.Code, w.Body)
	}
	if g.mayControl(httptest.NewRequest("POST", "/probe", nil)) {
		t.Error("mayControl without a principal, auth on: true")
	}
}

func TestAuthOff(t *testing.T) {
	g, logs := probeGateway(t, nil)
	for hdr, want := range map[string]string{"": "default true", "acme": "acme true"} {
		r := httptest.NewRequest("POST", "/probe", nil)
		r.Header.Set("Authorization", "Bearer junk")
		if hdr != "" {
			r.Header.Set(TenantHeader, hdr)
		}
		w := httptest.NewRecorder()
		g.Handler().ServeHTTP(w, r)
		if w.Code != 200 || w.Body.String() != want {
			t.Errorf("header %q: %d %s, want %s", hdr, w.Code, w.Body, want)
		}
	}
	if !strings.Contains(logs.String(), "auth is off") {
		t.Errorf("no startup line saying auth is off:\n%s", logs)
	}
}

// TestWebSocketThroughWrap: a browser-style handshake authenticates with the
// bearer subprotocol, the real subprotocol is selected, and the upgrade is
// counted as a ws connection for as long as the handler runs.
func TestWebSocketThroughWrap(t *testing.T) {
	g, _ := probeGateway(t, probeTokens)
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/workflows/w1/ws"

	if _, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"agentbus.v1"}}); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("handshake without a token: %v %v, want 401", resp, err)
	}
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"agentbus.v1", BearerSubprotocol + tokAcme}})
	if err != nil {
		t.Fatalf("handshake with the bearer subprotocol: %v", err)
	}
	defer c.CloseNow()
	if c.Subprotocol() != "agentbus.v1" || strings.Contains(resp.Header.Get("Sec-WebSocket-Protocol"), tokAcme) {
		t.Errorf("selected subprotocol %q (header %q), want agentbus.v1 and the token never echoed", c.Subprotocol(), resp.Header.Get("Sec-WebSocket-Protocol"))
	}
	if _, msg, err := c.Read(ctx); err != nil || string(msg) != "acme" {
		t.Fatalf("first message %q %v, want the tenant acme", msg, err)
	}
	if got := gaugeValue(t, g, "ws"); got != 1 {
		t.Errorf("ws connections while open: %v, want 1", got)
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
}

// gaugeValue reads agentbus_gateway_connections{kind} from the registry.
func gaugeValue(t *testing.T, g *Gateway, kind string) float64 {
	t.Helper()
	mfs, err := g.stats().registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "agentbus_gateway_connections" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no connections gauge for %s", kind)
	return 0
}
