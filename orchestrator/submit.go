package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// handleSubmission starts a workflow: checkpoint, plan, first dispatches.
func (o *Orchestrator) handleSubmission(ctx context.Context, d *bus.Delivery) (err error) {
	env := d.Envelope
	if env.Type != events.TypeWorkflowSubmitted {
		return fmt.Errorf("%w: %s on a submission subject", bus.ErrPoison, env.Type)
	}
	p, err := subjects.Parse(d.Subject)
	if err != nil {
		return fmt.Errorf("%w: %w", bus.ErrPoison, err)
	}
	if env.TenantID != p.Tenant {
		// The subject is the authority: NATS permissions guard it per tenant.
		return fmt.Errorf("%w: ce-tenantid %q differs from the subject's tenant %q", bus.ErrPoison, env.TenantID, p.Tenant)
	}
	workflow := env.WorkflowID
	if workflow == "" {
		workflow = env.ID
	}
	if err := subjects.ValidWorkflow(workflow); err != nil {
		return fmt.Errorf("%w: no ce-workflowid and ce-id is not a workflow id: %w", bus.ErrPoison, err)
	}
	var sub events.WorkflowSubmitted
	if err := env.Unmarshal(&sub); err != nil {
		return fmt.Errorf("%w: %w", bus.ErrPoison, err)
	}
	ctx, span := o.startSubmit(ctx, d, p.Tenant, workflow)
	defer func() { endSpan(span, err) }()
	cp := newCheckpoint(p.Tenant, workflow, sub.Query, time.Now().UTC())
	cp.Metadata = sub.Metadata
	rooted(ctx, cp)
	// Planning (and a follow-up's rewrite) may wait on an LLM for longer
	// than AckWait: keep the submission ours meanwhile, or it would be
	// planned twice.
	defer d.KeepInProgress(ctx, o.cfg.AckWait/3)()
	if err := o.converse(ctx, cp, &sub); err != nil {
		return err
	}
	if sub.Fork != nil {
		err = o.fork(ctx, cp, *sub.Fork)
	} else {
		err = o.plan(ctx, cp, sub)
	}
	if err != nil {
		return err
	}
	err = o.create(ctx, cp)
	if errors.Is(err, bus.ErrConflict) {
		o.log.Debug("submission for an existing workflow", "tenant", p.Tenant, "workflow", workflow)
		return nil
	}
	if err == nil {
		o.log.Info("workflow started", "tenant", p.Tenant, "workflow", workflow, "steps", len(cp.Plan.Steps), "status", cp.Status)
	}
	return err
}

// plan fills a fresh checkpoint: the plan, its stages, the first events and
// dispatches, or a failure naming what is wrong with the plan.
func (o *Orchestrator) plan(ctx context.Context, cp *Checkpoint, sub events.WorkflowSubmitted) error {
	if err := cp.emit(events.TypeStatus, "", events.Status{State: events.StateSubmitted, Message: "workflow accepted", TraceID: cp.TraceID}); err != nil {
		return err
	}
	why := ""
	pctx, span := o.tracer.Start(ctx, "workflow plan")
	if sub.Plan != nil {
		cp.Plan = *sub.Plan
		span.SetAttributes(attrPlanned.String("submitted"))
	} else {
		cp.Plan, why = o.planQuery(pctx, sub.Query)
		if p, lifted := autoIngest(cp.Plan, sub.Metadata); lifted {
			cp.Plan, why = p, why+"; ingest without approval ("+MetadataAutoIngest+")"
		}
		if p, added := o.withAnswer(pctx, cp.Plan, sub.Query); added != "" {
			cp.Plan, why = p, why+"; "+added
		}
		// The planner fell back (the LLM failed, or no planner could run).
		span.SetAttributes(attrPlanned.String(why), attrFallback.Bool(strings.Contains(why, " failed")))
		why = "; " + why
	}
	span.SetAttributes(attrSteps.Int(len(cp.Plan.Steps)))
	span.End()
	stages, err := Stages(cp.Plan)
	if err == nil {
		err = o.checkCapabilities(ctx, cp.Plan)
	}
	var pe *PlanError
	if errors.As(err, &pe) {
		return cp.fail(events.Error{Code: pe.Code, Message: pe.Message, StepID: pe.StepID, Pointer: pe.Pointer})
	}
	if err != nil {
		return err
	}
	cp.Stages = stages
	for _, s := range cp.Plan.Steps {
		cp.Tasks[s.ID] = &Task{Capability: s.Capability, Status: events.StateSubmitted}
	}
	cp.Status = events.StateWorking
	if sub.TimeoutMS > 0 {
		if err := o.arm(cp, time.Duration(sub.TimeoutMS)*time.Millisecond); err != nil {
			return err
		}
	}
	msg := fmt.Sprintf("planned %d steps in %d stages%s%s", len(cp.Plan.Steps), len(stages), why, cp.resolvedNote())
	if err := cp.emit(events.TypeStatus, "", events.Status{State: events.StateWorking, Message: msg}); err != nil {
		return err
	}
	cp.planned(time.Now().UTC())
	return o.dispatchReady(cp)
}

func (o *Orchestrator) checkCapabilities(ctx context.Context, p events.Plan) error {
	known := map[string]bool{}
	for i, s := range p.Steps {
		ok, seen := known[s.Capability]
		if !seen {
			var err error
			if ok, err = o.cfg.Catalog(ctx, s.Capability); err != nil {
				return fmt.Errorf("orchestrator: capability %s: %w", s.Capability, err)
			}
			known[s.Capability] = ok
		}
		if !ok {
			return &PlanError{Code: events.CodeUnknownCapability, StepID: s.ID, Pointer: fmt.Sprintf("/plan/steps/%d/capability", i),
				Message: fmt.Sprintf("step %q needs capability %q, which no agent serves", s.ID, s.Capability)}
		}
	}
	return nil
}

// malformedSubmission fails a workflow whose submission could not be
// decoded, when the subject and headers say which workflow it was, so that a
// client following its events learns why.
func (o *Orchestrator) malformedSubmission(ctx context.Context, subject string, header map[string][]string, cause error) {
	p, err := subjects.Parse(subject)
	if err != nil {
		return
	}
	workflow := first(header, events.HeaderWorkflow)
	if workflow == "" {
		workflow = first(header, events.HeaderID)
	}
	if subjects.ValidWorkflow(workflow) != nil {
		return
	}
	cp := newCheckpoint(p.Tenant, workflow, "", time.Now().UTC())
	e := events.Error{Code: events.CodeInvalidRequest, Message: cause.Error()}
	var de *events.DecodeError
	if errors.As(cause, &de) {
		e.Pointer, e.Message = de.Where, "malformed submission: "+de.Reason+" (at "+de.Where+")"
	}
	if err := cp.fail(e); err != nil {
		return
	}
	if err := o.create(ctx, cp); err != nil && !errors.Is(err, bus.ErrConflict) {
		o.log.Warn("recording a malformed submission", "workflow", workflow, "err", err)
	}
}

func first(h map[string][]string, key string) string {
	for k, v := range h {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}
