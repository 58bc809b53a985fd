package llm

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names this package's spans' instrumentation scope.
const tracerName = "github.com/agentbus/agentbus/llm"

// startSpan starts a client span for one request to the model, following
// OpenTelemetry's GenAI conventions ("chat gpt-4o-mini", gen_ai.*). The
// tracer comes from the span already in ctx (the planner's or a step
// run's), so that this package needs no provider of its own and records
// nothing when its caller is not traced.
func startSpan(ctx context.Context, op, model, host string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil // nothing to hang a child on: no allocation
	}
	operation := semconv.GenAIOperationNameChat
	if op == "embeddings" {
		operation = semconv.GenAIOperationNameEmbeddings
	}
	return parent.TracerProvider().Tracer(tracerName).Start(ctx, op+" "+model,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(operation, semconv.GenAIProviderNameOpenAI, semconv.GenAIRequestModel(model),
			semconv.ServerAddress(host)))
}

// endSpan records a request's outcome and token usage on its span, if
// startSpan started one.
func endSpan(span trace.Span, responseModel string, in, out int64, err error) {
	if span == nil {
		return
	}
	if responseModel != "" {
		span.SetAttributes(semconv.GenAIResponseModel(responseModel))
	}
	if in > 0 || out > 0 {
		span.SetAttributes(semconv.GenAIUsageInputTokens(int(in)), semconv.GenAIUsageOutputTokens(int(out)))
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeOther)
	}
	span.End()
}
