package agents

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
)

// tracerName names the worker runtime's spans' instrumentation scope.
const tracerName = "github.com/agentbus/agentbus/agents"

// Span attributes of agentbus's own, beside OpenTelemetry's messaging and
// GenAI conventions.
const (
	AttrTenant      = attribute.Key("agentbus.tenant.id")
	AttrWorkflow    = attribute.Key("agentbus.workflow.id")
	AttrStep        = attribute.Key("agentbus.step.id")
	AttrCapability  = attribute.Key("agentbus.step.capability")
	AttrAttempt     = attribute.Key("agentbus.step.attempt")
	AttrDelivery    = attribute.Key("agentbus.step.delivery")
	AttrRedelivered = attribute.Key("agentbus.step.redelivered")
	AttrWorker      = attribute.Key("agentbus.worker.id")
)

// traced runs handle for one delivery inside the step's spans, children of
// the step request's ce-traceparent (the orchestrator's dispatch span):
// "step queue", recorded after the fact from the request's ce-time to now,
// and "step run", which the agent's own spans, its events and its reply
// descend from. A run that fails, is dead-lettered or is canceled ends
// with status error and the reason.
func (w *Worker) traced(ctx context.Context, r *running, capability string, d *bus.Delivery) error {
	tr := w.cfg.TracerProvider.Tracer(tracerName)
	env := d.Envelope
	parent := env.Context(ctx)
	now := time.Now()
	start := env.Time
	if start.IsZero() || start.After(now) {
		start = now // clocks that disagree make no negative wait
	}
	_, q := tr.Start(parent, "step queue", trace.WithTimestamp(start))
	ctx, span := tr.Start(parent, "step run", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(now))
	if q.IsRecording() || span.IsRecording() {
		// Attributes only for spans that keep them: without tracing they
		// were a worker's largest garbage a step.
		attrs := []attribute.KeyValue{
			semconv.MessagingSystemKey.String("nats"),
			semconv.MessagingDestinationName(d.Subject),
			semconv.MessagingMessageID(env.ID),
			AttrTenant.String(env.TenantID), AttrWorkflow.String(env.WorkflowID), AttrStep.String(env.StepID),
			AttrCapability.String(capability), AttrDelivery.Int64(int64(d.Delivered)),
			AttrRedelivered.Bool(d.Delivered > 1), AttrWorker.String(w.cfg.Name),
		}
		q.SetAttributes(attrs...)
		span.SetAttributes(append(attrs,
			semconv.MessagingOperationTypeProcess, semconv.MessagingOperationName("process"),
			semconv.MessagingConsumerGroupName(w.consumeConfig(capability).Durable))...)
	}
	q.End(trace.WithTimestamp(now))
	defer span.End()
	err := w.handle(ctx, r, capability, d)
	switch {
	case errors.Is(err, bus.ErrHandBack):
		span.SetStatus(codes.Error, "handed back at shutdown: "+err.Error())
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// spanAttempt notes on the run span which attempt of the step ran.
func spanAttempt(ctx context.Context, attempt int) {
	trace.SpanFromContext(ctx).SetAttributes(AttrAttempt.Int(attempt))
}

// spanFailed ends the run span's story with status error and why: a
// failure that will be retried, a dead letter, or the workflow's cancel.
func spanFailed(ctx context.Context, reason string) {
	trace.SpanFromContext(ctx).SetStatus(codes.Error, reason)
}

// traceEnvelope puts the current span's W3C context on an event the
// running step publishes (reply, progress, artifact).
func traceEnvelope(ctx context.Context, env *events.Envelope) {
	env.TraceParent = events.TraceParent(ctx)
}
