package search

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/internal/spans"
)

// tracerName names the search agent's spans' instrumentation scope.
const tracerName = "github.com/agentbus/agentbus/agents/search"

// startSpan starts a span under the one in ctx (see spans.Start): this
// package holds no provider and records nothing for an untraced caller.
func startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return spans.Start(ctx, tracerName, name, attrs...)
}

// endSpan ends span with status error if err is set.
func endSpan(span trace.Span, err error) { spans.End(span, err) }
