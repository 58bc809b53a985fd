package retrieval

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/internal/spans"
)

// tracerName names this package's spans' instrumentation scope.
const tracerName = "github.com/agentbus/agentbus/retrieval"

// startSpan starts a span under the one in ctx (see spans.Start): this
// package holds no provider and records nothing for an untraced caller.
func startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return spans.Start(ctx, tracerName, name, attrs...)
}

// endSpan ends span with status error if err is set.
func endSpan(span trace.Span, err error) { spans.End(span, err) }

// Span attributes of a search.
const (
	attrProfile  = attribute.Key("agentbus.search.profile")
	attrProfiles = attribute.Key("agentbus.search.profiles")
	attrHits     = attribute.Key("agentbus.search.hits")
	attrFailed   = attribute.Key("agentbus.search.failed_profiles")
)
