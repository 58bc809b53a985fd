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

// rooted notes the span in ctx as the workflow's root in the checkpoint.
func rooted(ctx context.Context, cp *Checkpoint) {
	cp.TraceParent = events.TraceParent(ctx)
	cp.TraceID = events.TraceID(cp.TraceParent)
}

// root returns ctx with the workflow's root span as its parent.
func (cp *Checkpoint) root(ctx context.Context) context.Context {
	return events.WithTraceParent(ctx, cp.TraceParent)
}

// startReply starts the span of handling a step's reply, a child of the
// worker's run span that the reply's ce-traceparent names.
func (o *Orchestrator) startReply(ctx context.Context, d *bus.Delivery, tenant, workflow string) (context.Context, trace.Span) {
	attrs := append(messaging(semconv.MessagingOperationTypeProcess, "process", d.Subject, d.Envelope.ID),
		attrTenant.String(tenant), attrWorkflow.String(workflow), attrStep.String(d.Envelope.StepID),
		attrDelivery.Int64(int64(d.Delivered)))
	return o.tracer.Start(d.Envelope.Context(ctx), "step reply",
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
}

// stepSpan starts the span of one dispatched attempt of a step, to be
// ended once the checkpoint that records it is stored, and returns its
// W3C context for the request's ce-traceparent.
func (o *Orchestrator) stepSpan(cp *Checkpoint, s events.PlanStep, t *Task, subject, msgID string) string {
	attrs := append(messaging(semconv.MessagingOperationTypeSend, "publish", subject, msgID),
		attrTenant.String(cp.TenantID), attrWorkflow.String(cp.WorkflowID), attrStep.String(s.ID),
		attrCapability.String(t.Capability), attrAttempt.Int(t.Attempt))
	ctx, span := o.tracer.Start(cp.root(context.Background()), "step "+t.Capability,
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	cp.spans = append(cp.spans, span)
	return events.TraceParent(ctx)
}

// traceMark is what a transition's spans need to know of the checkpoint
// before the transition: whether it was over, and which steps awaited
// approval.
type traceMark struct {
	terminal bool
	awaiting []string
}

func markTrace(cp *Checkpoint) traceMark {
	m := traceMark{terminal: cp.Status.Terminal()}
	for id, t := range cp.Tasks {
		if t.Approval != nil && t.Approval.State == ApprovalPending {
			m.awaiting = append(m.awaiting, id)
		}
	}
	return m
}

// stored ends the spans of a transition whose checkpoint was stored: the
// dispatches it started, the approval waits it closed and, if it ended
// the workflow, the workflow's last span.
func (o *Orchestrator) stored(cp *Checkpoint, before traceMark) {
	now := time.Now()
	for _, s := range cp.spans {
		s.End(trace.WithTimestamp(now))
	}
	cp.spans = nil
	for _, id := range before.awaiting {
		t := cp.Tasks[id]
		if t == nil || t.Approval == nil || t.Approval.State == ApprovalPending {
			continue
		}
		start := now
		if t.CompletedAt != nil && t.CompletedAt.Before(now) {
			start = *t.CompletedAt
		}
		_, span := o.tracer.Start(events.WithTraceParent(context.Background(), t.TraceParent), "step approval",
			trace.WithTimestamp(start), trace.WithAttributes(attrTenant.String(cp.TenantID),
				attrWorkflow.String(cp.WorkflowID), attrStep.String(id), attrApproval.String(t.Approval.State)))
		if t.Approval.State == ApprovalRejected {
			span.SetStatus(codes.Error, "rejected: "+t.Approval.Comment)
		}
		span.End(trace.WithTimestamp(now))
	}
	if before.terminal || !cp.Status.Terminal() {
		return
	}
	_, span := o.tracer.Start(cp.root(context.Background()), "workflow "+string(cp.Status),
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
