// Package telemetry builds the OpenTelemetry TracerProvider that cmd/agentbus
// hands down to the gateway, the orchestrator and the workers. It owns the
// one place where the standard OTEL_* environment variables are read
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_SDK_DISABLED …): spans
// leave the process only through the OTLP/HTTP exporter it configures.
// Tracing off yields a no-op provider: no exporter, no allocation per span.
// Nothing here sets the global otel provider; packages take the provider
// they are given.
package telemetry
