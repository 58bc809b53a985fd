package search

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the search agent's spans' instrumentation scope.
const tracerName = "github.com/agentbus/agentbus/agents/search"

// noSpan is what startSpan returns for an untraced step: it does nothing.
var noSpan = trace.SpanFromContext(context.Background())

// startSpan starts a span under the step's run span in ctx, with the
// tracer that span came from; an untraced step records nothing.
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
