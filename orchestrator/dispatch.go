package orchestrator

import (
	"encoding/json"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// settled reports whether a task no longer holds up its dependents: it
// completed (and, if it needed one, got its approval), or it was optional
// and failed.
func (cp *Checkpoint) settled(id string) bool {
	t := cp.Tasks[id]
	if t.Status == events.StateCompleted {
		return true
	}
	s, _ := cp.planStep(id)
	return t.Status == events.StateFailed && s.Optional
}

// dispatchReady queues a step request for every task that has not been
// dispatched and whose dependencies have all settled, with their outputs
// (null for an optional step that failed). Steps are taken in stage order,
// so the dispatch order is Kahn's.
func (o *Orchestrator) dispatchReady(cp *Checkpoint) error {
	for _, stage := range cp.Stages {
		for _, id := range stage {
			t := cp.Tasks[id]
			if t.Status != events.StateSubmitted {
				continue
			}
			s, _ := cp.planStep(id)
			deps, ready := cp.inputs(s)
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

// inputs returns the outputs of a step's dependencies (null for an
// optional one that failed), and whether they have all settled.
func (cp *Checkpoint) inputs(s events.PlanStep) (map[string]json.RawMessage, bool) {
	deps := make(map[string]json.RawMessage, len(s.DependsOn))
	for _, d := range s.DependsOn {
		if !cp.settled(d) {
			return nil, false
		}
		deps[d] = cp.Tasks[d].Output
		if deps[d] == nil {
			deps[d] = json.RawMessage("null")
		}
	}
	return deps, true
}

// dispatch queues one step request on the task's capability (the plan's,
// or its fallback after a failure) as a new attempt whose reply alone
// counts from now on.
func (o *Orchestrator) dispatch(cp *Checkpoint, s events.PlanStep, t *Task, deps map[string]json.RawMessage) error {
	if err := o.request(cp, s, t, deps); err != nil {
		return err
	}
	t.Since = t.Attempt
	return cp.emit(events.TypeStatus, s.ID, events.Status{State: events.StateWorking, StepID: s.ID, Message: "dispatched to " + t.Capability})
}

// request queues the task's next attempt: its step request and, at the
// workflow's first, the watchdog's timer (lease.go).
func (o *Orchestrator) request(cp *Checkpoint, s events.PlanStep, t *Task, deps map[string]json.RawMessage) error {
	subj, err := subjects.Step(cp.TenantID, t.Capability)
	if err != nil {
		return err
	}
	t.Attempt++
	t.Status = events.StateWorking
	t.StepSeq = 0
	t.HeldSince, t.SteppedDownAt = nil, nil
	now := time.Now().UTC()
	t.DispatchedAt = &now
	req := events.StepRequested{StepID: s.ID, Capability: t.Capability, Attempt: t.Attempt, Query: cp.Query, Input: s.Input, TimeoutMS: s.TimeoutMS,
		Problems: cp.problems(), Conversation: cp.conversation(), User: cp.User}
	if len(deps) > 0 {
		req.DependencyOutputs = deps
	}
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	cp.Phase = PhaseExecuting
	if cp.Watch == 0 {
		if err := o.armWatch(cp); err != nil {
			return err
		}
	}
	msgID := events.StepKey(cp.TenantID, cp.WorkflowID, s.ID, t.Attempt)
	t.TraceParent = o.stepSpan(cp, s, t, subj, msgID)
	cp.Outbox = append(cp.Outbox, Outgoing{
		Subject: subj, MsgID: msgID,
		Type: events.TypeStepRequested, StepID: s.ID, Time: now, Data: data, TraceParent: t.TraceParent,
	})
	return nil
}

// advance moves the workflow on after a task settled: dispatch what is
// ready, wait for approvals, or complete.
func (o *Orchestrator) advance(cp *Checkpoint) error {
	if err := o.dispatchReady(cp); err != nil {
		return err
	}
	pending, open := 0, 0
	for id, t := range cp.Tasks {
		switch {
		case t.Approval != nil && t.Approval.State == ApprovalPending:
			pending++
		case !cp.settled(id):
			open++
		}
	}
	switch {
	case pending == 0 && open == 0:
		return o.complete(cp)
	case pending > 0:
		cp.Status, cp.Phase = events.StateInputRequired, PhaseAwaiting
	default:
		cp.Status, cp.Phase = events.StateWorking, PhaseExecuting
	}
	return nil
}

func (o *Orchestrator) complete(cp *Checkpoint) error {
	outputs := make(map[string]json.RawMessage, len(cp.Tasks))
	partial := false
	for _, s := range cp.Plan.Steps {
		out := cp.Tasks[s.ID].Output
		if cp.Tasks[s.ID].Status != events.StateCompleted {
			partial, out = true, json.RawMessage("null")
		}
		outputs[s.ID] = out
	}
	sinks := sinkSteps(cp.Plan)
	result := outputs[sinks[0]]
	if len(sinks) > 1 {
		m := make(map[string]json.RawMessage, len(sinks))
		for _, id := range sinks {
			m[id] = outputs[id]
		}
		result, _ = json.Marshal(m)
	}
	cp.Status, cp.Phase, cp.Result = events.StateCompleted, PhaseDone, result
	msg := "workflow completed"
	if partial {
		msg = "workflow completed with partial results: optional steps failed"
	}
	if err := cp.emit(events.TypeStatus, "", events.Status{State: events.StateCompleted, Message: msg}); err != nil {
		return err
	}
	cp.measure(time.Now().UTC(), true)
	return cp.emit(events.TypeComplete, "", events.Complete{
		Result: result, Outputs: outputs, DurationMS: cp.EndToEndMS, PhaseLatency: cp.latency(),
	})
}
