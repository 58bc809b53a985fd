package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/permissions"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
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
	wf := env.WorkflowID
	if wf == "" {
		wf = env.ID
	}
	if err := subjects.ValidWorkflow(wf); err != nil {
		return fmt.Errorf("%w: no ce-workflowid and ce-id is not a workflow id: %w", bus.ErrPoison, err)
	}
	var sub events.WorkflowSubmitted
	if err := env.Unmarshal(&sub); err != nil {
		return fmt.Errorf("%w: %w", bus.ErrPoison, err)
	}
	ctx, span := o.startSubmit(ctx, d, p.Tenant, wf)
	defer func() { endSpan(span, err) }()
	if key := d.Header(api.NATSIdempotencyHeader); key != "" {
		// A bare NATS submitter's idempotency key (the gateway and the
		// SDK claim theirs before they publish; then this finds its own).
		dup, refused, err := o.claimKey(ctx, p.Tenant, wf, key, sub)
		switch {
		case err != nil:
			return err
		case dup != "":
			o.log.Info("submission with an idempotency key already used: not started again", "tenant", p.Tenant, "workflow", wf, "first", dup)
			return nil
		case refused != nil:
			cp := workflow.New(workflow.Start{TenantID: p.Tenant, WorkflowID: wf, Query: sub.Query}, time.Now().UTC())
			eff, spans, err := o.begin(cp, workflow.Malformed{Error: *refused})
			if err != nil {
				return err
			}
			if err := o.create(ctx, cp, eff, spans); err != nil && !errors.Is(err, bus.ErrConflict) {
				return err
			}
			return nil
		}
	}
	// Planning (and a follow-up's rewrite) may wait on an LLM for longer
	// than AckWait: keep the submission ours meanwhile, or it would be
	// planned twice.
	defer d.KeepInProgress(ctx, o.cfg.AckWait/3)()
	session, err := o.converse(ctx, p.Tenant, &sub)
	if err != nil {
		return err
	}
	tp := events.TraceParent(ctx)
	cp := workflow.New(workflow.Start{TenantID: p.Tenant, WorkflowID: wf, Query: sub.Query, Metadata: sub.Metadata,
		Priority: sub.Priority, Budget: sub.Budget, User: sub.User, Role: sub.Role, Session: session, TraceParent: tp, TraceID: events.TraceID(tp)}, time.Now().UTC())
	var in workflow.Input
	if sub.Fork != nil {
		in, err = o.forkOf(ctx, p.Tenant, sub.Role, *sub.Fork)
	} else {
		in, err = o.plan(ctx, p.Tenant, sub)
	}
	if err != nil {
		return err
	}
	in, g, err := o.limitKey(ctx, cp, in, sub)
	if err != nil {
		return err
	}
	eff, spans, err := o.begin(cp, in)
	if err != nil {
		return err
	}
	if note, ok := ctx.Value(recoveryNoteKey{}).(workflow.Note); ok {
		// Started by the reconciler: the note is stored with the start,
		// before any step can answer (a note after that could find the
		// workflow ended).
		if neff, err := workflow.Apply(cp, note, time.Now(), workflow.Policy{ApprovalThreshold: o.cfg.ApprovalThreshold, StepLease: o.cfg.StepLease}); err == nil {
			cp.Outbox = append(cp.Outbox, neff.Outbox...)
		}
	}
	// create gives cp up to the next transition (the cache): what is
	// needed of it afterwards is taken first.
	steps, status := len(cp.Plan.Steps), cp.Status
	var conc *events.Concurrency
	if cp.Concurrency != nil {
		c := *cp.Concurrency
		conc = &c
	}
	err = o.create(ctx, cp, eff, spans)
	if errors.Is(err, bus.ErrConflict) {
		o.log.Debug("submission for an existing workflow", "tenant", p.Tenant, "workflow", wf)
		err = nil
	} else if err == nil {
		o.log.Info("workflow started", "tenant", p.Tenant, "workflow", wf, "steps", steps, "status", status)
	}
	if err == nil && conc != nil {
		err = o.started(ctx, p.Tenant, wf, *conc, g)
	}
	return err
}

// limitKey applies a submission's concurrency key to its plan: acquire
// decides whether the workflow starts, waits (Planned.Wait) or is
// canceled at once (Planned.Cancel), and which running ones it preempts
// (canceled here). A plan the engine will refuse acquires nothing.
func (o *Orchestrator) limitKey(ctx context.Context, cp *workflow.Checkpoint, in workflow.Input, sub events.WorkflowSubmitted) (workflow.Input, grant, error) {
	k, ok := submissionKey(sub)
	pl, planned := in.(workflow.Planned)
	if !ok || !planned || pl.Refused != nil {
		return in, grant{}, nil
	}
	if _, err := workflow.Stages(pl.Plan); err != nil {
		return in, grant{}, nil
	}
	g, err := o.acquire(ctx, cp.TenantID, cp.WorkflowID, k)
	if err != nil {
		return in, g, err
	}
	cp.Concurrency = &k.Concurrency
	pl.Wait, pl.Cancel = g.Wait, g.Cancel
	if err := o.preempt(ctx, cp.TenantID, k.Key, cp.WorkflowID, g, k.DoubleText == events.DoubleTextRollback); err != nil {
		return in, g, err
	}
	return pl, g, nil
}

// started starts what acquire found with a free slot, and the new
// workflow itself if it was queued and a release gave it a slot before
// its checkpoint was stored.
func (o *Orchestrator) started(ctx context.Context, tenant, wf string, conc events.Concurrency, g grant) error {
	err := o.start(ctx, tenant, conc.Key, "earlier", g.Start)
	if g.Wait != "" {
		err = errors.Join(err, o.startHeld(ctx, tenant, wf, conc))
	}
	return err
}

// plan plans a submission (its own plan, or the planner's for its query)
// and checks that an agent serves each capability and that the tool
// permissions let the submission's role run it: the engine's input,
// which refuses a plan with a bad structure, an unknown capability or a
// denied one, and holds the steps to confirm before they run.
func (o *Orchestrator) plan(ctx context.Context, tenant string, sub events.WorkflowSubmitted) (workflow.Planned, error) {
	in := workflow.Planned{TimeoutMS: sub.TimeoutMS}
	pctx, span := o.tracer.Start(ctx, "workflow plan")
	if sub.Plan != nil {
		in.Plan = *sub.Plan
		span.SetAttributes(attrPlanned.String("submitted"))
	} else {
		var why string
		in.Plan, why = o.planQuery(pctx, sub.Query)
		if p, lifted := autoIngest(in.Plan, sub.Metadata); lifted {
			in.Plan, why = p, why+"; ingest without approval ("+MetadataAutoIngest+")"
		}
		if p, applied := withSearchOptions(in.Plan, sub.Metadata); applied {
			in.Plan, why = p, why+"; search options ("+events.MetadataSearchOptions+")"
		}
		if p, added := o.withAnswer(pctx, in.Plan, sub.Query); added != "" {
			in.Plan, why = p, why+"; "+added
		}
		// The planner fell back (the LLM failed, or no planner could run).
		span.SetAttributes(attrPlanned.String(why), attrFallback.Bool(strings.Contains(why, " failed")))
		in.Note = why
	}
	span.SetAttributes(attrSteps.Int(len(in.Plan.Steps)))
	span.End()
	if _, err := workflow.Stages(in.Plan); err != nil {
		return in, nil // the engine refuses it, naming what is wrong
	}
	err := o.checkCapabilities(ctx, in.Plan)
	if errors.As(err, &in.Refused) {
		return in, nil
	}
	if err != nil {
		return in, err
	}
	in.Confirm, in.Refused = o.permit(tenant, sub.Role, in.Plan)
	return in, nil
}

// permit checks a plan against the tool permissions table: the refusal
// of a denied step (naming its pointer and the rule), or the rules by
// which steps wait for a confirmation. A refusal is logged with its rule;
// the workflow's error event carries it too.
func (o *Orchestrator) permit(tenant, role string, p events.Plan) (map[string]string, *workflow.PlanError) {
	confirm, err := o.cfg.Permissions.Plan(tenant, role, p)
	var de *permissions.DeniedError
	if !errors.As(err, &de) {
		return confirm, nil
	}
	o.log.Info("plan refused by a tool permission", "tenant", tenant, "role", role, "step", de.StepID, "capability", de.Capability, "rule", de.Rule)
	return nil, &workflow.PlanError{Code: events.CodePermissionDenied, StepID: de.StepID, Pointer: de.Pointer(), Rule: de.Rule,
		Message: fmt.Sprintf("step %q may not run %s for role %q: refused by the tool permissions rule %s", de.StepID, de.Capability, roleName(role), de.Rule)}
}

// roleName is how a submission's role reads in a refusal.
func roleName(role string) string {
	if role == "" {
		return "none"
	}
	return role
}

func (o *Orchestrator) checkCapabilities(ctx context.Context, p events.Plan) error {
	known := map[string]bool{}
	for i, s := range p.Steps {
		if s.Capability == workflow.CapabilityWait {
			// Run by the engine: no agent serves it; its input is checked
			// here against its schema, naming where, and again by the
			// engine (workflow.CheckWaits).
			if err := checkWait(i, s); err != nil {
				return err
			}
			continue
		}
		ok, seen := known[s.Capability]
		if !seen {
			var err error
			if ok, err = o.cfg.Catalog(ctx, s.Capability); err != nil {
				return fmt.Errorf("orchestrator: capability %s: %w", s.Capability, err)
			}
			known[s.Capability] = ok
		}
		if !ok {
			return &workflow.PlanError{Code: events.CodeUnknownCapability, StepID: s.ID, Pointer: fmt.Sprintf("/plan/steps/%d/capability", i),
				Message: fmt.Sprintf("step %q needs capability %q, which no agent serves", s.ID, s.Capability)}
		}
	}
	return o.checkInputs(ctx, p)
}

// checkWait checks the input of the wait step at index i of a plan
// against schema wait.input.
func checkWait(i int, s events.PlanStep) error {
	in := []byte(s.Input)
	if len(in) == 0 {
		in = []byte("null")
	}
	var ve *schemas.ValidationError
	if err := schemas.Validate(schemas.WaitInput, in); errors.As(err, &ve) && len(ve.Problems) > 0 {
		p := ve.Problems[0]
		return &workflow.PlanError{Code: events.CodeInvalidInput, StepID: s.ID, Pointer: fmt.Sprintf("/plan/steps/%d/input%s", i, p.Pointer),
			Message: fmt.Sprintf("step %q: the input of a wait step: %s", s.ID, ve.Error())}
	} else if err != nil {
		return err
	}
	return nil
}

// checkInputs refuses a plan a step of which has an input that does not
// fit the input schema its capability's agent registered (an MCP tool's):
// before dispatch, naming where. A registry that cannot be read refuses
// nothing: the agent checks its input itself.
func (o *Orchestrator) checkInputs(ctx context.Context, p events.Plan) error {
	var ie *discovery.InputError
	if err := o.cfg.Registry.CheckInputs(ctx, p); errors.As(err, &ie) {
		return &workflow.PlanError{Code: events.CodeInvalidInput, StepID: ie.StepID, Pointer: ie.Pointer(), Message: ie.Error()}
	} else if err != nil {
		o.log.Warn("plan inputs not checked against the registered input schemas", "err", err)
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
	wf := first(header, events.HeaderWorkflow)
	if wf == "" {
		wf = first(header, events.HeaderID)
	}
	if subjects.ValidWorkflow(wf) != nil {
		return
	}
	cp := workflow.New(workflow.Start{TenantID: p.Tenant, WorkflowID: wf}, time.Now().UTC())
	e := events.Error{Code: events.CodeInvalidRequest, Message: cause.Error()}
	var de *events.DecodeError
	if errors.As(cause, &de) {
		e.Pointer, e.Message = de.Where, "malformed submission: "+de.Reason+" (at "+de.Where+")"
	}
	eff, spans, err := o.begin(cp, workflow.Malformed{Error: e})
	if err != nil {
		o.log.Warn("recording a malformed submission", "workflow", wf, "err", err)
		return
	}
	if err := o.create(ctx, cp, eff, spans); err != nil && !errors.Is(err, bus.ErrConflict) {
		o.log.Warn("recording a malformed submission", "workflow", wf, "err", err)
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

// claimKey claims a bare NATS submission's idempotency key for workflow
// wf: it returns the workflow the key already names when this one is its
// duplicate, or the error that refuses the submission (the key is not
// valid, or names a different request).
func (o *Orchestrator) claimKey(ctx context.Context, tenant, wf, key string, sub events.WorkflowSubmitted) (string, *events.Error, error) {
	kv, err := o.bus.Idempotency(ctx)
	if err != nil {
		return "", nil, err
	}
	dup, err := api.ClaimDelivered(ctx, kv, tenant, key, wf, sub)
	var reused *api.KeyReusedError
	switch {
	case errors.As(err, &reused):
		return "", &events.Error{Code: events.CodeInvalidRequest, Pointer: "/header/" + api.NATSIdempotencyHeader,
			Message: fmt.Sprintf("idempotency key %q was used for another request (workflow %s) within 24 h", key, reused.Workflow)}, nil
	case errors.Is(err, api.ErrInvalidKey):
		return "", &events.Error{Code: events.CodeInvalidRequest, Pointer: "/header/" + api.NATSIdempotencyHeader, Message: err.Error()}, nil
	}
	return dup, nil, err
}

// recoveryNoteKey carries, in a submission's context, the note the
// reconciler wants stored with the workflow's start (reconcile.go).
type recoveryNoteKey struct{}
