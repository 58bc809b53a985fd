package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/internal/telemetry"
)

// otelFlags is --otel: trace every workflow with OpenTelemetry and export
// the spans over OTLP/HTTP, configured by the standard OTEL_* variables.
type otelFlags struct {
	on bool
}

func (f *otelFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.on, "otel", false,
		"trace workflows with OpenTelemetry, exported over OTLP/HTTP as the standard OTEL_* variables say "+
			"(OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318; OTEL_TRACES_SAMPLER; OTEL_SERVICE_NAME …)")
}

// start builds the tracer provider of a process whose service.name is
// service (unless OTEL_SERVICE_NAME says otherwise): nil when --otel is
// off, which every component takes for "no spans". stop flushes the spans
// still queued, within 5 seconds.
func (f *otelFlags) start(ctx context.Context, service string, log *slog.Logger) (tp trace.TracerProvider, stop func(), err error) {
	p, err := telemetry.New(ctx, telemetry.Config{Enabled: f.on, ServiceName: service, Version: currentVersion().Version})
	if err != nil {
		return nil, nil, &exitError{code: exitUsage, msg: "--otel: " + err.Error()}
	}
	if !p.Enabled() {
		return nil, func() {}, nil
	}
	log.Info("tracing on: OpenTelemetry spans over OTLP/HTTP", "endpoint", p.Endpoint)
	return p, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := p.Shutdown(sctx); err != nil {
			log.Warn("tracing: flushing spans at exit", "err", err)
		}
	}, nil
}
