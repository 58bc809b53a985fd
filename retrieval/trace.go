package retrieval

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names this package's spans' instrumentation scope.
const tracerName = "github.com/agentbus/agentbus/retrieval"

// noSpan is what startSpan returns for an untraced caller: ending it or
// setting its attributes does nothing.
var noSpan = trace.SpanFromContext(context.Background())

// startSpan starts a span under the one in ctx (the search step's run),
// with the tracer that span came from: this package holds no provider and
// records nothing for an untraced caller.
func startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, noSpan
	}
	return parent.TracerProvider().Tracer(tracerName).Start(ctx, name, trace.WithAttributes(attrs...))
}

// endSpan ends span with status error if err is set.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Span attributes of a search.
const (
	attrProfile  = attribute.Key("agentbus.search.profile")
	attrProfiles = attribute.Key("agentbus.search.profiles")
	attrHits     = attribute.Key("agentbus.search.hits")
	attrFailed   = attribute.Key("agentbus.search.failed_profiles")
)
