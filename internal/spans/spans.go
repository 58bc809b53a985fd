// Package spans starts child spans for packages that hold no tracer
// provider of their own (retrieval, the search agent): the tracer comes
// from the span already in the context, so an untraced caller records
// nothing and allocates nothing. Safe for concurrent use.
package spans

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// none is what Start returns for an untraced caller: ending it or setting
// its attributes does nothing.
var none = trace.SpanFromContext(context.Background())

// Start starts a span named name under the one in ctx, in the
// instrumentation scope scope, with the tracer that span came from.
func Start(ctx context.Context, scope, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, none
	}
	return parent.TracerProvider().Tracer(scope).Start(ctx, name, trace.WithAttributes(attrs...))
}

// End ends span, with status error if err is set.
func End(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
