package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/agentbus/agentbus/internal/telemetry"
)

func TestOffIsNoop(t *testing.T) {
	for name, cfg := range map[string]telemetry.Config{"off": {}, "disabled by OTEL_SDK_DISABLED": {Enabled: true}} {
		t.Run(name, func(t *testing.T) {
			if cfg.Enabled {
				t.Setenv("OTEL_SDK_DISABLED", "true")
			}
			p, err := telemetry.New(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if p.Enabled() {
				t.Fatal("enabled")
			}
			_, span := p.Tracer("x").Start(t.Context(), "nothing")
			if span.IsRecording() || span.SpanContext().IsValid() {
				t.Fatal("a span is recorded with tracing off")
			}
			if err := p.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestOnExportsOverOTLPHTTPWhereTheEnvironmentSays(t *testing.T) {
	var posts atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			if b, _ := io.ReadAll(r.Body); len(b) > 0 {
				posts.Add(1)
			}
		}
	}))
	defer recv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	p, err := telemetry.New(t.Context(), telemetry.Config{Enabled: true, ServiceName: "agentbus-test"})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Enabled() || p.Endpoint != recv.URL+"/v1/traces" {
		t.Fatalf("enabled %v, endpoint %q", p.Enabled(), p.Endpoint)
	}
	_, span := p.Tracer("x").Start(context.Background(), "one")
	span.End()
	if err := p.Shutdown(t.Context()); err != nil { // flushes
		t.Fatal(err)
	}
	if posts.Load() == 0 {
		t.Fatal("no export reached the endpoint")
	}
	_ = p.Shutdown(t.Context()) // a second Shutdown is harmless
}
