package gateway

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/events"
)

// tracerName names the gateway's spans' instrumentation scope.
const tracerName = "github.com/agentbus/agentbus/gateway"

// traced wraps the gateway's handler in otelhttp when tracing is on: a
// server span per request, named by its route pattern, child of the
// caller's W3C traceparent. With tracing off it only lifts an incoming
// traceparent into the request's context, so that a submission still
// joins its caller's trace at no cost beyond a header read.
func (g *Gateway) traced(h http.Handler) http.Handler {
	tc := propagation.TraceContext{}
	if g.cfg.TracerProvider == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("traceparent") != "" {
				r = r.WithContext(tc.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
			}
			h.ServeHTTP(w, r)
		})
	}
	return otelhttp.NewHandler(h, "gateway",
		otelhttp.WithTracerProvider(g.cfg.TracerProvider),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()), // metrics are Prometheus's (metrics.go)
		otelhttp.WithPropagators(tc),
		otelhttp.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case "/metrics", "/healthz", "/health", "/readyz":
				return false
			}
			return true
		}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if _, pattern := g.mux.Handler(r); pattern != "" {
				return pattern // "POST /v1/workflows": bounded, unlike the path
			}
			return r.Method
		}))
}

// sendSpan starts the producer span of publishing a submission (from HTTP,
// A2A or any other front door), puts its W3C context on env as
// ce-traceparent, and returns the function that ends it. The
// orchestrator's "workflow submit" span is its child.
func (g *Gateway) sendSpan(ctx context.Context, subject string, env *events.Envelope) func(error) {
	tp := g.cfg.TracerProvider
	if tp == nil {
		env.TraceParent = events.TraceParent(ctx) // the caller's, if any
		return func(error) {}
	}
	ctx, span := tp.Tracer(tracerName).Start(ctx, "workflow send", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(semconv.MessagingSystemKey.String("nats"), semconv.MessagingOperationTypeSend,
			semconv.MessagingOperationName("publish"), semconv.MessagingDestinationName(subject),
			semconv.MessagingMessageID(env.ID), attribute.String("agentbus.tenant.id", env.TenantID),
			attribute.String("agentbus.workflow.id", env.WorkflowID)))
	env.TraceParent = events.TraceParent(ctx)
	return func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
