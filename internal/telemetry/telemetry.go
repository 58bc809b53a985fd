package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Config says whether to trace and how this process names itself.
type Config struct {
	// Enabled turns tracing on; off (the default) means a no-op provider.
	// OTEL_SDK_DISABLED=true turns it off whatever Enabled says.
	Enabled bool
	// ServiceName is service.name unless OTEL_SERVICE_NAME is set;
	// default "agentbus".
	ServiceName string
	// Version is service.version, if known.
	Version string
	// Exporter replaces the OTLP/HTTP exporter (tests); it is still
	// batched.
	Exporter sdktrace.SpanExporter
	// Sync exports every span as it ends instead of in batches (tests and
	// short-lived commands).
	Sync bool
}

// Provider is a TracerProvider with the way to flush and stop it. Shutdown
// is safe to call twice.
type Provider struct {
	trace.TracerProvider
	shutdown func(context.Context) error
	// Endpoint is where spans are exported, for the startup log ("" when
	// off or when Config.Exporter replaced the exporter).
	Endpoint string
}

// Enabled reports whether spans are recorded and exported.
func (p *Provider) Enabled() bool { return p.shutdown != nil }

// Shutdown flushes the spans still queued and stops the exporter, bounded
// by ctx.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.shutdown == nil {
		return nil
	}
	return p.shutdown(ctx)
}

// New builds the provider cfg describes. The exporter does not connect
// until it has spans to send, so a collector that is down costs only
// dropped spans (the SDK logs them), never a failed start.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if !cfg.Enabled || strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return &Provider{TracerProvider: noop.NewTracerProvider()}, nil
	}
	if cfg.ServiceName == "" {
		cfg.ServiceName = "agentbus"
	}
	attrs := []resource.Option{
		resource.WithAttributes(semconv.ServiceName(cfg.ServiceName)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
		resource.WithHost(),
		resource.WithProcessPID(),
	}
	if cfg.Version != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(cfg.Version)))
	}
	res, err := resource.New(ctx, attrs...)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	exp, endpoint := cfg.Exporter, ""
	if exp == nil {
		// otlptracehttp reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS,
		// _TIMEOUT, _COMPRESSION and _INSECURE itself. With no endpoint
		// set it would speak TLS to localhost:4318; the specification's
		// default, and what a collector beside `make run` serves, is
		// plain http://localhost:4318.
		var opts []otlptracehttp.Option
		if !endpointSet() {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		if exp, err = otlptracehttp.New(ctx, opts...); err != nil {
			return nil, fmt.Errorf("telemetry: otlp/http exporter: %w", err)
		}
		endpoint = Endpoint()
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if cfg.Sync {
		opts = append(opts, sdktrace.WithSyncer(exp))
	} else {
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	// No WithSampler: the SDK reads OTEL_TRACES_SAMPLER and
	// OTEL_TRACES_SAMPLER_ARG, default parentbased_always_on.
	tp := sdktrace.NewTracerProvider(opts...)
	return &Provider{TracerProvider: tp, shutdown: tp.Shutdown, Endpoint: endpoint}, nil
}

// Endpoint returns where the OTLP/HTTP exporter sends spans according to
// the environment.
func Endpoint() string {
	if e := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); e != "" {
		return e
	}
	if e := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); e != "" {
		return strings.TrimSuffix(e, "/") + "/v1/traces"
	}
	return "http://localhost:4318/v1/traces"
}

// endpointSet reports whether the environment chose the endpoint or its
// transport security; otherwise New picks plain HTTP to localhost.
func endpointSet() bool {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE"} {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}

// Noop returns tp, or the no-op provider when tp is nil: what a Config
// whose TracerProvider is unset defaults to.
func Noop(tp trace.TracerProvider) trace.TracerProvider {
	if tp == nil {
		return noop.NewTracerProvider()
	}
	return tp
}
