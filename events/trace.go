package events

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// HeaderW3CTraceParent is the plain W3C header a bare NATS publisher (or an
// OpenTelemetry propagator) may set instead of ce-traceparent; Decode takes
// it when ce-traceparent is absent.
const HeaderW3CTraceParent = "traceparent"

// traceContext is the W3C propagator; it keeps no state.
var traceContext = propagation.TraceContext{}

// TraceParent returns the W3C traceparent of the span in ctx ("00-<trace
// id>-<span id>-<flags>"), or "" when ctx holds no valid span context. An
// event built in that context carries it as ce-traceparent.
func TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c[HeaderW3CTraceParent]
}

// WithTraceParent returns ctx with tp as its remote parent span, so that a
// span started from it joins tp's trace. An empty or malformed tp (a
// publisher's mistake is no reason to drop its event) leaves ctx as it is.
func WithTraceParent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.MapCarrier{HeaderW3CTraceParent: tp})
}

// Context returns ctx with the envelope's ce-traceparent as remote parent.
func (e Envelope) Context(ctx context.Context) context.Context {
	return WithTraceParent(ctx, e.TraceParent)
}

// TraceID returns the trace id in a W3C traceparent, or "" if tp is not
// one.
func TraceID(tp string) string {
	sc := trace.SpanContextFromContext(WithTraceParent(context.Background(), tp))
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
