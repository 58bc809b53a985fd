package agentkit

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentbus/agentbus/agents"
)

// QueryOf returns the step's query: inputQuery (the query its input
// names) or else the workflow's query, trimmed; "" when neither has one.
func QueryOf(req agents.Request, inputQuery string) string {
	if q := strings.TrimSpace(inputQuery); q != "" {
		return q
	}
	return strings.TrimSpace(req.Query)
}

// NeedQuery is QueryOf for an agent that cannot work without a query:
// when there is none it fails permanently, wrapping errNoQuery (the
// agent's own sentinel) and naming the step.
func NeedQuery(req agents.Request, inputQuery string, errNoQuery error) (string, error) {
	q := QueryOf(req, inputQuery)
	if q == "" {
		return "", fmt.Errorf("%w: %w: step %q has neither /query in its input nor a workflow query", agents.ErrPermanent, errNoQuery, req.StepID)
	}
	return q, nil
}

// Progress reports a step's progress through emit, which may be nil (an
// agent called directly, outside a worker). A failure to publish is
// ignored: progress events are advisory and the step goes on.
func Progress(ctx context.Context, emit agents.Emitter, percent float64, message string) {
	if emit != nil {
		_ = emit.Progress(ctx, percent, message)
	}
}
