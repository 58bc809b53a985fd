package orchestrator

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
	"github.com/agentbus/agentbus/workflow"
)

// One trace per workflow. The submission's span ("workflow submit", a
// child of the submitter's ce-traceparent if it sent one) is the
// workflow's root within agentbus; its W3C context is stored in the
// checkpoint (TraceParent), so that whichever orchestrator process makes
// the next transition parents its spans there, never on a span object in
// memory. Under it: "workflow plan" (with the planner's LLM calls), one
// "step <capability>" per dispatched attempt (its context travels in the
// step request's ce-traceparent and is stored in the task, so the
// worker's "step queue" and "step run" and a later "step approval" are its
// children), and "workflow <completed|failed|canceled>" at the end.
// Spans started inside a transition are ended only once its checkpoint is
// stored: those of an attempt that lost the revision race are never ended,
// so never exported.

// tracerName names the orchestrator's spans' instrumentation scope.
const tracerName = "github.com/agentbus/agentbus/orchestrator"

// Span attributes of agentbus's own.
const (
	attrTenant     = attribute.Key("agentbus.tenant.id")
	attrWorkflow   = attribute.Key("agentbus.workflow.id")
	attrStep       = attribute.Key("agentbus.step.id")
	attrCapability = attribute.Key("agentbus.step.capability")
	attrAttempt    = attribute.Key("agentbus.step.attempt")
	attrStatus     = attribute.Key("agentbus.workflow.status")
	attrSteps      = attribute.Key("agentbus.workflow.steps")
	attrDuration   = attribute.Key("agentbus.workflow.duration_ms")
	attrApproval   = attribute.Key("agentbus.step.approval")
	attrDelivery   = attribute.Key("agentbus.delivery")
	attrPlanned    = attribute.Key("agentbus.plan.source")
	attrFallback   = attribute.Key("agentbus.plan.fallback")
)

func messaging(op attribute.KeyValue, name, subject, id string) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.MessagingSystemKey.String("nats"), op, semconv.MessagingOperationName(name),
		semconv.MessagingDestinationName(subject), semconv.MessagingMessageID(id),
	}
}

// startSubmit starts the workflow's root span for a submission delivery.
func (o *Orchestrator) startSubmit(ctx context.Context, d *bus.Delivery, tenant, workflow string) (context.Context, trace.Span) {
	attrs := append(messaging(semconv.MessagingOperationTypeProcess, "process", d.Subject, d.Envelope.ID),
		attrTenant.String(tenant), attrWorkflow.String(workflow), attrDelivery.Int64(int64(d.Delivered)))
	return o.tracer.Start(d.Envelope.Context(ctx), "workflow submit",
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
}

// root returns ctx with the workflow's root span as its parent.
func root(ctx context.Context, cp *workflow.Checkpoint) context.Context {
	return events.WithTraceParent(ctx, cp.TraceParent)
}

// startReply starts the span of handling a step's reply, a child of the
// worker's run span that the reply's ce-traceparent names.
func (o *Orchestrator) startReply(ctx context.Context, subject string, env events.Envelope, tenant, workflow string, delivered uint64) (context.Context, trace.Span) {
	attrs := append(messaging(semconv.MessagingOperationTypeProcess, "process", subject, env.ID),
		attrTenant.String(tenant), attrWorkflow.String(workflow), attrStep.String(env.StepID),
		attrDelivery.Int64(int64(delivered)))
	return o.tracer.Start(env.Context(ctx), "step reply",
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
}

// dispatched starts the span of every step attempt a transition
// dispatched, to be ended once the checkpoint that records it is stored,
// and puts its W3C context in the task and in the request's
// ce-traceparent.
func (o *Orchestrator) dispatched(cp *workflow.Checkpoint, eff *workflow.Effects) []trace.Span {
	if len(eff.Dispatches) == 0 {
		return nil
	}
	spans := make([]trace.Span, 0, len(eff.Dispatches))
	for _, d := range eff.Dispatches {
		m := &eff.Outbox[d.Index]
		attrs := append(messaging(semconv.MessagingOperationTypeSend, "publish", m.Subject, m.MsgID),
			attrTenant.String(cp.TenantID), attrWorkflow.String(cp.WorkflowID), attrStep.String(d.StepID),
			attrCapability.String(d.Capability), attrAttempt.Int(d.Attempt))
		ctx, span := o.tracer.Start(root(context.Background(), cp), "step "+d.Capability,
			trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
		spans = append(spans, span)
		m.TraceParent = events.TraceParent(ctx)
		if t := cp.Tasks[d.StepID]; t != nil && t.Attempt == d.Attempt {
			t.TraceParent = m.TraceParent
		}
	}
	return spans
}

// stored ends the spans of a transition whose checkpoint was stored: the
// dispatches it started, the approval waits it closed and, if it ended
// the workflow, the workflow's last span.
func (o *Orchestrator) stored(cp *workflow.Checkpoint, eff workflow.Effects, spans []trace.Span) {
	now := time.Now()
	for _, s := range spans {
		s.End(trace.WithTimestamp(now))
	}
	for _, tr := range eff.Transitions {
		t := cp.Tasks[tr.StepID]
		if tr.Cause != workflow.CauseApproval || tr.StepID == "" || t == nil || t.Approval == nil {
			continue
		}
		start := now
		if t.CompletedAt != nil && t.CompletedAt.Before(now) {
			start = *t.CompletedAt
		}
		_, span := o.tracer.Start(events.WithTraceParent(context.Background(), t.TraceParent), "step approval",
			trace.WithTimestamp(start), trace.WithAttributes(attrTenant.String(cp.TenantID),
				attrWorkflow.String(cp.WorkflowID), attrStep.String(tr.StepID), attrApproval.String(t.Approval.State)))
		if t.Approval.State == workflow.ApprovalRejected {
			span.SetStatus(codes.Error, "rejected: "+t.Approval.Comment)
		}
		span.End(trace.WithTimestamp(now))
	}
	if eff.Outcome == "" {
		return
	}
	_, span := o.tracer.Start(root(context.Background(), cp), "workflow "+string(cp.Status),
		trace.WithTimestamp(now), trace.WithAttributes(attrTenant.String(cp.TenantID), attrWorkflow.String(cp.WorkflowID),
			attrStatus.String(string(cp.Status)), attrSteps.Int(len(cp.Plan.Steps)),
			attrDuration.Float64(float64(now.Sub(cp.CreatedAt).Microseconds())/1000)))
	switch {
	case cp.Status == events.StateCanceled:
		span.SetStatus(codes.Error, "canceled: "+cp.Canceled)
	case cp.Error != nil:
		span.SetStatus(codes.Error, cp.Error.Message)
	case cp.Status != events.StateCompleted:
		span.SetStatus(codes.Error, string(cp.Status))
	}
	span.End(trace.WithTimestamp(now))
}

// endSpan ends a handler's span with status error if it failed; a
// message put off until later (a deadline not yet due) did not fail.
func endSpan(span trace.Span, err error) {
	var later *bus.RetryAfter
	switch {
	case errors.As(err, &later):
		span.SetAttributes(attribute.String("agentbus.retry_after", later.Delay.String()))
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
