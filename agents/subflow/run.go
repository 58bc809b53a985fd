package subflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
)

// Child is a workflow to run for a step.
type Child struct {
	// ID is the child's workflow id (see ID).
	ID string
	// Query or Plan is what it runs; with a plan, Query is only shown.
	Query string
	Plan  *events.Plan
	// Metadata is added to the child's; it may not name a Reserved key.
	Metadata map[string]string
	// Timeout bounds the child; 0 means the time the step has left. It
	// never outlives the step's deadline.
	Timeout time.Duration
	// Label names the child in the progress the step reports of it
	// ("tool call lookup", "child workflow").
	Label string
}

// Outcome is how a child workflow ended.
type Outcome struct {
	WorkflowID string
	// State is completed, failed or canceled.
	State  events.State
	Result json.RawMessage
	// Error is why a child that did not complete did not: its workflow's
	// error code and message ("canceled" for a canceled child).
	Error events.Error
	// Attached says the child had been started already (by an earlier
	// delivery of the step) and was followed, not submitted.
	Attached bool
}

// Err is the outcome as an error: nil for a completed child, else a
// *ChildError.
func (o Outcome) Err() error {
	if o.State == events.StateCompleted {
		return nil
	}
	return &ChildError{WorkflowID: o.WorkflowID, State: o.State, Code: o.Error.Code, Message: o.Error.Message}
}

// ChildError is a child workflow that failed or was canceled.
type ChildError struct {
	WorkflowID string
	State      events.State
	Code       string
	Message    string
}

func (e *ChildError) Error() string {
	return fmt.Sprintf("subflow: child workflow %s %s (%s): %s", e.WorkflowID, e.State, e.Code, e.Message)
}

// Run starts child c for the step req (or re-attaches to it, when an
// earlier delivery of the step started it) and follows it to its end,
// reporting on emit when it waits for a confirmation. It returns how the
// child ended; an error when it could not be started or followed:
// ErrDepth (wrapped with agents.ErrPermanent), a bus error, or the
// context's cause when the step's context ended first — having canceled
// the child, unless the worker is stopping (agents.Canceled).
func (r *Runner) Run(ctx context.Context, req agents.Request, emit agents.Emitter, c Child) (Outcome, error) {
	out := Outcome{WorkflowID: c.ID}
	cp, found, err := r.load(ctx, req.TenantID, c.ID)
	if err != nil {
		return out, fmt.Errorf("subflow: reading child workflow %s: %w", c.ID, err)
	}
	if found {
		out.Attached = true
		r.log.Info("re-attaching to a child workflow started by an earlier delivery", "workflow", req.WorkflowID, "step", req.StepID, "child", c.ID, "status", cp.Status)
		if cp.Status.Terminal() {
			return ended(out, cp), nil
		}
	} else if err := r.submit(ctx, req, c); err != nil {
		return out, err
	}
	err = r.cfg.Bus.Follow(ctx, req.TenantID, c.ID, 0, func(ctx context.Context, rec bus.Record) error {
		return r.observe(ctx, rec, emit, c, &out)
	})
	if out.State != "" {
		return out, nil
	}
	if ctx.Err() == nil {
		if err == nil {
			err = errors.New("its events stopped before its end")
		}
		return out, fmt.Errorf("subflow: following child workflow %s: %w", c.ID, err)
	}
	cause := context.Cause(ctx)
	if !agents.Canceled(ctx) && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// The worker is stopping: the step is handed back, and its next
		// delivery follows this child on.
		r.log.Info("step stopped while its child workflow runs: the child is left for the step's next delivery", "workflow", req.WorkflowID, "step", req.StepID, "child", c.ID)
		return out, cause
	}
	reason := fmt.Sprintf("the step %s of workflow %s that started it ended: %v", req.StepID, req.WorkflowID, cause)
	if err := r.cancel(req.TenantID, c.ID, reason); err != nil {
		r.log.Warn("could not cancel a child workflow", "workflow", req.WorkflowID, "step", req.StepID, "child", c.ID, "err", err)
	}
	return out, cause
}

// submit submits child c of req's step, with what it inherits.
func (r *Runner) submit(ctx context.Context, req agents.Request, c Child) error {
	parent, err := r.Parent(ctx, req)
	if err != nil {
		return err
	}
	depth := parent.Depth + 1
	if depth > r.cfg.MaxDepth {
		return fmt.Errorf("%w: %w: workflow %s is at depth %d and the bound is %d", agents.ErrPermanent, ErrDepth, req.WorkflowID, parent.Depth, r.cfg.MaxDepth)
	}
	md := make(map[string]string, len(c.Metadata)+3)
	for k, v := range c.Metadata {
		if Reserved(k) {
			return fmt.Errorf("%w: subflow: metadata %q is set by the parent, not by the child", agents.ErrPermanent, k)
		}
		md[k] = v
	}
	maps.Copy(md, map[string]string{MetadataParentWorkflow: req.WorkflowID, MetadataParentStep: req.StepID, MetadataDepth: strconv.Itoa(depth)})
	sub := events.WorkflowSubmitted{Query: c.Query, Plan: c.Plan, Metadata: md, User: req.User, Role: req.Role, Priority: parent.Priority}
	limit := c.Timeout
	if dl, ok := ctx.Deadline(); ok && (limit <= 0 || time.Until(dl) < limit) {
		limit = time.Until(dl)
	}
	if limit != 0 {
		sub.TimeoutMS = max(limit.Milliseconds(), 1)
	}
	if _, err := api.Submit(ctx, r.cfg.Bus, r.cfg.Source, req.TenantID, c.ID, sub); err != nil {
		return fmt.Errorf("subflow: submitting child workflow %s: %w", c.ID, err)
	}
	r.log.Debug("child workflow submitted", "workflow", req.WorkflowID, "step", req.StepID, "child", c.ID, "depth", depth)
	return nil
}

// observe reads one event of the child: its end (bus.ErrStop, with out
// set), or a wait for a confirmation, which the step reports.
func (r *Runner) observe(ctx context.Context, rec bus.Record, emit agents.Emitter, c Child, out *Outcome) error {
	switch rec.Envelope.Type {
	case events.TypeComplete:
		var v events.Complete
		if err := rec.Envelope.Unmarshal(&v); err != nil {
			return err
		}
		out.State, out.Result = events.StateCompleted, v.Result
		return bus.ErrStop
	case events.TypeError:
		var v events.Error
		_ = rec.Envelope.Unmarshal(&v)
		out.State, out.Error = events.StateFailed, events.Error{Code: v.Code, Message: v.Message, StepID: v.StepID, Pointer: v.Pointer, Rule: v.Rule}
		return bus.ErrStop
	case events.TypeCancelled:
		var v events.Cancelled
		_ = rec.Envelope.Unmarshal(&v)
		out.State, out.Error = events.StateCanceled, events.Error{Code: string(events.StateCanceled), Message: "canceled: " + v.Reason}
		return bus.ErrStop
	case events.TypeStatus:
		var st events.Status
		if emit == nil || rec.Envelope.Unmarshal(&st) != nil || st.State != events.StateInputRequired {
			return nil
		}
		msg := fmt.Sprintf("%s waits for a decision in workflow %s: approve or reject it there", c.Label, c.ID)
		if st.Confirm != nil {
			msg = fmt.Sprintf("%s waits for a confirmation in workflow %s (%s): approve or reject it there", c.Label, c.ID, st.Confirm.Rule)
		}
		_ = emit.Progress(ctx, 0, msg)
	}
	return nil
}

// ended is the outcome of a child whose checkpoint says it has ended.
func ended(out Outcome, cp checkpoint) Outcome {
	out.State = cp.Status
	switch {
	case cp.Status == events.StateCompleted:
		out.Result = cp.Result
	case cp.Error != nil:
		out.Error = *cp.Error
	case cp.Status == events.StateCanceled:
		out.Error = events.Error{Code: string(events.StateCanceled), Message: "canceled: " + cp.Canceled}
	default:
		out.Error = events.Error{Code: string(cp.Status), Message: "the child workflow ended " + string(cp.Status)}
	}
	if out.State != events.StateCompleted && out.State != events.StateCanceled {
		out.State = events.StateFailed // rejected reads as failed
	}
	return out
}
