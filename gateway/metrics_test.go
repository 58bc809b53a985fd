package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

// scrape GETs /metrics (without a token: it is open) and returns the text.
func (s *stack) scrape(t testing.TB) string {
	t.Helper()
	r := s.mustDo(t, http.MethodGet, "/metrics", nil)
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %q: %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	return string(r.Body)
}

func wantMetric(t testing.TB, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(text, "\n"+l+"\n") {
			t.Errorf("/metrics lacks %q", l)
		}
	}
}

func TestMetricsAfterTraffic(t *testing.T) {
	b := newBlocker()
	s := startStackWith(t, b)
	wantMetric(t, s.scrape(t),
		`agentbus_gateway_connections{kind="sse"} 0`,
		`agentbus_gateway_connections{kind="ws"} 0`,
		`agentbus_gateway_frames_sent_total{kind="ws"} 0`,
		`agentbus_gateway_replays_total{kind="sse"} 0`,
		`agentbus_gateway_resets_total{kind="ws"} 0`,
		`agentbus_gateway_slow_client_closes_total{kind="ws"} 0`,
	)

	sub := s.mustSubmit(t, map[string]any{"workflow_id": "metered", "plan": plan("A:block")})
	s.state(t, sub.StateURL)
	s.mustDo(t, http.MethodGet, "/v1/workflows/none", nil)
	s.mustDo(t, http.MethodGet, "/no/such/route", nil)

	// While the stream is open it is a connection; once the workflow ends
	// and the handler returned, it is not.
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	canceled := false
	_, err := s.readSSE(ctx, sub.EventsURL, func(f sseFrame, _ []string) error {
		if f.Event != "connected" || canceled {
			return nil
		}
		canceled = true
		wantMetric(t, s.scrape(t), `agentbus_gateway_connections{kind="sse"} 1`)
		if r := s.mustDo(t, http.MethodPost, "/v1/workflows/metered/cancel", nil); r.Status != http.StatusOK {
			return errors.New("cancel: " + string(r.Body))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	text := s.scrape(t)
	wantMetric(t, text,
		`agentbus_gateway_http_request_duration_seconds_count{code="202",route="POST /v1/workflows"} 1`,
		`agentbus_gateway_http_request_duration_seconds_count{code="200",route="GET /v1/workflows/{id}"} 1`,
		`agentbus_gateway_http_request_duration_seconds_count{code="404",route="GET /v1/workflows/{id}"} 1`,
		`agentbus_gateway_http_request_duration_seconds_count{code="404",route="unmatched"} 1`,
		`agentbus_gateway_http_request_duration_seconds_count{code="200",route="GET /v1/workflows/{id}/events"} 1`,
		`agentbus_gateway_http_request_duration_seconds_count{code="200",route="POST /v1/workflows/{id}/cancel"} 1`,
		`agentbus_gateway_connections{kind="sse"} 0`,
		`agentbus_gateway_http_requests_in_flight 1`, // this scrape
	)
	for _, family := range []string{"go_goroutines", "process_open_fds"} {
		if !strings.Contains(text, "# TYPE "+family+" ") {
			t.Errorf("/metrics lacks %s", family)
		}
	}
}

func TestMetricsCountAuthFailures(t *testing.T) {
	s := startStack(t, withTokens)
	s.mustDo(t, http.MethodGet, "/v1/workflows", nil)
	s.mustDo(t, http.MethodGet, "/v1/workflows", nil, bearer("wrong-wrong-wrong-wrong")...)
	s.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query":"x"}`), bearer(viewerToken)...)
	text := s.scrape(t)
	wantMetric(t, text,
		`agentbus_gateway_auth_failures_total{reason="missing"} 1`,
		`agentbus_gateway_auth_failures_total{reason="invalid"} 1`,
		`agentbus_gateway_auth_failures_total{reason="forbidden"} 1`,
		`agentbus_gateway_http_request_duration_seconds_count{code="401",route="GET /v1/workflows"} 2`,
		`agentbus_gateway_http_request_duration_seconds_count{code="403",route="POST /v1/workflows"} 1`,
	)
	for _, secret := range []string{"wrong-wrong", viewerToken, acmeToken} {
		if strings.Contains(text, secret) {
			t.Errorf("/metrics shows a token")
		}
	}
}

func readiness(t testing.TB, s *stack) (int, gateway.Readiness) {
	t.Helper()
	r := s.mustDo(t, http.MethodGet, "/readyz", nil)
	var rd gateway.Readiness
	if err := json.Unmarshal(r.Body, &rd); err != nil {
		t.Fatalf("GET /readyz: %d %s: %v", r.Status, r.Body, err)
	}
	return r.Status, rd
}

// TestReadyzFollowsTheConnection runs a gateway on a NATS connection of its
// own, then closes that connection.
func TestReadyzFollowsTheConnection(t *testing.T) {
	env := bustest.New(t)
	own := bustest.Connect(t, env)
	s := startGateway(t, env, func(c *gateway.Config) { c.Bus = own; withTokens(c) })
	if code, rd := readiness(t, s); code != http.StatusOK || rd.Status != "ready" || len(rd.Missing) > 0 {
		t.Fatalf("GET /readyz: %d %+v, want 200 ready", code, rd)
	}
	own.Close()
	code, rd := readiness(t, s)
	if code != http.StatusServiceUnavailable || rd.Status != "not ready" || len(rd.Missing) != 1 || !strings.HasPrefix(rd.Missing[0], "NATS connection") {
		t.Fatalf("GET /readyz after the connection closed: %d %+v, want 503 naming the NATS connection", code, rd)
	}
	// A 503 in the API's error shape too, beside status and missing.
	e := wantError(t, "GET /readyz after the connection closed", s.mustDo(t, http.MethodGet, "/readyz", nil), http.StatusServiceUnavailable, "unavailable")
	if !strings.Contains(e.Error.Message, "NATS connection") {
		t.Errorf("GET /readyz: error message %q does not name the NATS connection", e.Error.Message)
	}
}

func TestReadyzNamesWhatIsMissing(t *testing.T) {
	env := bustest.New(t)
	s := startGateway(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	js := env.Bus.JetStream()
	if err := js.DeleteKeyValue(ctx, subjects.BucketControl); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, subjects.StreamDeadLetter); err != nil {
		t.Fatal(err)
	}
	code, rd := readiness(t, s)
	if code != http.StatusServiceUnavailable || len(rd.Missing) != 2 ||
		!strings.HasPrefix(rd.Missing[0], "stream "+subjects.StreamDeadLetter+" (") ||
		!strings.HasPrefix(rd.Missing[1], "bucket "+subjects.BucketControl+" (") {
		t.Fatalf("GET /readyz: %d %+v, want 503 naming the stream and the bucket", code, rd)
	}
}
