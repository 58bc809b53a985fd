package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

// TestCORS: a page on an allowed origin may call the API with a bearer
// token — its preflight is answered without credentials, its requests
// carry Access-Control-Allow-Origin — and may open a WebSocket; another
// origin's preflight is refused and its answers carry no allow header.
func TestCORS(t *testing.T) {
	s := startGateway(t, bustest.New(t), withTokens, func(c *gateway.Config) {
		c.CORS.Origins = []string{"https://app.example.com"}
	})
	// A running workflow of tenant acme, for the WebSocket.
	key, _ := subjects.CheckpointKey("acme", "acme-wf")
	kv, err := s.env.Bus.KV(context.Background(), subjects.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), key, []byte(`{"tenant_id":"acme","workflow_id":"acme-wf","status":"working","updated_at":"2020-01-02T03:04:05Z"}`)); err != nil {
		t.Fatal(err)
	}
	preflight := func(origin string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodOptions, s.base+"/v1/workflows", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := preflight("https://app.example.com"); r.StatusCode != http.StatusNoContent ||
		r.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		r.Header.Get("Access-Control-Allow-Headers") == "" || r.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("allowed preflight: %d %v", r.StatusCode, r.Header)
	}
	if r := preflight("https://evil.example.net"); r.StatusCode != http.StatusForbidden || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("other origin's preflight: %d %v", r.StatusCode, r.Header)
	}
	for origin, want := range map[string]string{"https://app.example.com": "https://app.example.com", "https://evil.example.net": ""} {
		r := s.mustDo(t, http.MethodGet, "/v1/workflows", nil, append(bearer(acmeToken), "Origin", origin)...)
		if r.Status != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != want {
			t.Fatalf("GET from %s: %d, allow origin %q, want %q", origin, r.Status, r.Header.Get("Access-Control-Allow-Origin"), want)
		}
	}
	c := s.mustDialWS(t, "/v1/workflows/acme-wf/ws", append(bearer(acmeToken), "Origin", "https://app.example.com")...)
	_ = c.CloseNow()
	if _, resp, err := s.dialWS(context.Background(), "/v1/workflows/acme-wf/ws", append(bearer(acmeToken), "Origin", "https://evil.example.net")...); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("WebSocket from another origin: %v %v, want 403", resp, err)
	}
}

// TestCORSOffByDefault: without --cors-origins a preflight is refused.
func TestCORSOffByDefault(t *testing.T) {
	s := startGateway(t, bustest.New(t))
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodOptions, s.base+"/v1/workflows", nil)
	req.Header.Set("Origin", "https://app.example.com")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight with CORS off: %d %v", resp.StatusCode, resp.Header)
	}
}
