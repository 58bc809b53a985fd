package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// dispatchReady queues a step request for every task that has not been
// dispatched and whose dependencies have all completed, with their outputs.
// Steps are taken in stage order, so the dispatch order is Kahn's.
func (o *Orchestrator) dispatchReady(cp *Checkpoint) error {
	for _, stage := range cp.Stages {
		for _, id := range stage {
			t := cp.Tasks[id]
			if t.Status != events.StateSubmitted {
				continue
			}
			s, _ := cp.planStep(id)
			deps := make(map[string]json.RawMessage, len(s.DependsOn))
			ready := true
			for _, d := range s.DependsOn {
				if cp.Tasks[d].Status != events.StateCompleted {
					ready = false
					break
				}
				deps[d] = cp.Tasks[d].Output
			}
			if !ready {
				continue
			}
			if err := o.dispatch(cp, s, t, deps); err != nil {
				return err
			}
		}
	}
	return nil
}

func (o *Orchestrator) dispatch(cp *Checkpoint, s events.PlanStep, t *Task, deps map[string]json.RawMessage) error {
	subj, err := subjects.Step(cp.TenantID, s.Capability)
	if err != nil {
		return err
	}
	t.Attempt++
	t.Status = events.StateWorking
	now := time.Now().UTC()
	t.DispatchedAt = &now
	req := events.StepRequested{StepID: s.ID, Capability: s.Capability, Attempt: t.Attempt, Query: cp.Query, Input: s.Input}
	if len(deps) > 0 {
		req.DependencyOutputs = deps
	}
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	cp.Outbox = append(cp.Outbox, Outgoing{
		Subject: subj, MsgID: events.StepKey(cp.TenantID, cp.WorkflowID, s.ID, t.Attempt),
		Type: events.TypeStepRequested, StepID: s.ID, Time: now, Data: data,
	})
	return cp.emit(events.TypeStatus, s.ID, events.Status{State: events.StateWorking, StepID: s.ID, Message: "dispatched to " + s.Capability})
}

// handleReply records a step's result and moves the workflow on.
func (o *Orchestrator) handleReply(ctx context.Context, d *bus.Delivery) error {
	p, err := subjects.Parse(d.Subject)
	if err != nil || p.Kind != "reply" {
		return fmt.Errorf("%w: reply on %q", bus.ErrPoison, d.Subject)
	}
	env := d.Envelope
	if env.TenantID != p.Tenant {
		return fmt.Errorf("%w: ce-tenantid %q differs from the subject's tenant %q", bus.ErrPoison, env.TenantID, p.Tenant)
	}
	var apply func(cp *Checkpoint) error
	switch env.Type {
	case events.TypeStepCompleted:
		var r events.StepCompleted
		if err := env.Unmarshal(&r); err != nil {
			return fmt.Errorf("%w: %w", bus.ErrPoison, err)
		}
		apply = func(cp *Checkpoint) error { return o.completed(cp, r) }
	case events.TypeStepFailed:
		var r events.StepFailed
		if err := env.Unmarshal(&r); err != nil {
			return fmt.Errorf("%w: %w", bus.ErrPoison, err)
		}
		apply = func(cp *Checkpoint) error { return o.failed(cp, r) }
	default:
		return fmt.Errorf("%w: %s on a reply subject", bus.ErrPoison, env.Type)
	}
	err = o.transition(ctx, p.Tenant, p.Last, apply)
	if err != nil && isNotFound(err) {
		return fmt.Errorf("%w: reply for unknown workflow %s", bus.ErrPoison, p.Last)
	}
	return err
}

func (o *Orchestrator) completed(cp *Checkpoint, r events.StepCompleted) error {
	t, ok := cp.Tasks[r.StepID]
	if !ok || cp.Status.Terminal() || t.Status == events.StateCompleted || t.Status == events.StateFailed {
		return errNoChange // late, duplicate or foreign: recorded once
	}
	now := time.Now().UTC()
	t.Status, t.Output, t.Worker, t.CompletedAt = events.StateCompleted, r.Output, r.Worker, &now
	if err := cp.emit(events.TypeStatus, r.StepID, events.Status{State: events.StateCompleted, StepID: r.StepID}); err != nil {
		return err
	}
	done, total := cp.completedCount(), len(cp.Tasks)
	if err := cp.emit(events.TypeProgress, r.StepID, events.Progress{
		CompletedSteps: done, TotalSteps: total, Percent: 100 * float64(done) / float64(total), StepID: r.StepID,
		Message: fmt.Sprintf("step %s completed (%d/%d)", r.StepID, done, total),
	}); err != nil {
		return err
	}
	if done < total {
		return o.dispatchReady(cp)
	}
	return o.complete(cp)
}

func (o *Orchestrator) complete(cp *Checkpoint) error {
	outputs := make(map[string]json.RawMessage, len(cp.Tasks))
	depended := map[string]bool{}
	for _, s := range cp.Plan.Steps {
		outputs[s.ID] = cp.Tasks[s.ID].Output
		for _, d := range s.DependsOn {
			depended[d] = true
		}
	}
	var sinks []string
	for _, s := range cp.Plan.Steps {
		if !depended[s.ID] {
			sinks = append(sinks, s.ID)
		}
	}
	result := outputs[sinks[0]]
	if len(sinks) > 1 {
		m := make(map[string]json.RawMessage, len(sinks))
		for _, id := range sinks {
			m[id] = outputs[id]
		}
		result, _ = json.Marshal(m)
	}
	cp.Status, cp.Result = events.StateCompleted, result
	if err := cp.emit(events.TypeStatus, "", events.Status{State: events.StateCompleted, Message: "workflow completed"}); err != nil {
		return err
	}
	return cp.emit(events.TypeComplete, "", events.Complete{
		Result: result, Outputs: outputs, DurationMS: float64(time.Since(cp.CreatedAt).Microseconds()) / 1000,
	})
}

func (o *Orchestrator) failed(cp *Checkpoint, r events.StepFailed) error {
	t, ok := cp.Tasks[r.StepID]
	if !ok || cp.Status.Terminal() || t.Status == events.StateCompleted || t.Status == events.StateFailed {
		return errNoChange
	}
	now := time.Now().UTC()
	t.Status, t.Error, t.Worker, t.CompletedAt = events.StateFailed, r.Error, r.Worker, &now
	if err := cp.emit(events.TypeStatus, r.StepID, events.Status{State: events.StateFailed, StepID: r.StepID, Message: r.Error}); err != nil {
		return err
	}
	return cp.fail(events.Error{Code: events.CodeStepFailed, StepID: r.StepID,
		Message: fmt.Sprintf("step %q (%s) failed: %s", r.StepID, r.Capability, r.Error)})
}
