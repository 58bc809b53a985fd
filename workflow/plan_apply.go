package workflow

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/events"
)

// planned fills a new checkpoint from its plan: the first events, the
// stages, the deadline and the first dispatches, or a failure naming what
// is wrong with the plan.
func (x *tx) planned(in Planned) error {
	cp := x.cp
	if err := x.emit(events.TypeStatus, "", events.Status{State: events.StateSubmitted, Message: "workflow accepted", TraceID: cp.TraceID}); err != nil {
		return err
	}
	cp.Plan = in.Plan
	stages, err := Stages(in.Plan)
	var pe *PlanError
	switch {
	case errors.As(err, &pe):
	case err != nil:
		return err
	case in.Refused != nil:
		pe = in.Refused
	default:
		pe = CheckWaits(in.Plan)
	}
	if pe != nil {
		return x.fail(events.Error{Code: pe.Code, Message: pe.Message, StepID: pe.StepID, Pointer: pe.Pointer, Rule: pe.Rule}, CausePlan)
	}
	cp.Stages = stages
	for _, s := range in.Plan.Steps {
		cp.Tasks[s.ID] = &Task{Capability: s.Capability, Status: events.StateSubmitted, Confirm: in.Confirm[s.ID]}
	}
	if in.Cancel != "" {
		return x.cancel(Cancel{Reason: in.Cancel})
	}
	if in.Wait != "" {
		x.setStatus(events.StateSubmitted, PhaseWaiting, CausePlan)
	} else {
		x.setStatus(events.StateWorking, PhasePlanning, CausePlan)
	}
	if in.TimeoutMS > 0 {
		at := cp.CreatedAt.Add(time.Duration(in.TimeoutMS) * time.Millisecond)
		cp.Deadline = &at
		m, err := DeadlineTimer(cp, at, x.now)
		if err != nil {
			return err
		}
		x.eff.Outbox = append(x.eff.Outbox, m)
	}
	note := ""
	if in.Note != "" {
		note = "; " + in.Note
	}
	if cp.Session != nil && cp.Session.Resolved != "" {
		note += "; " + cp.Session.Resolved
	}
	msg := fmt.Sprintf("planned %d steps in %d stages%s", len(in.Plan.Steps), len(stages), note)
	if in.Wait != "" {
		msg += "; " + in.Wait
	}
	if err := x.emit(events.TypeStatus, "", events.Status{State: cp.Status, Message: msg}); err != nil {
		return err
	}
	cp.planned(x.now)
	if in.Wait != "" {
		return nil // Released dispatches
	}
	if err := x.dispatchReady(); err != nil {
		return err
	}
	if len(cp.Awaiting()) > 0 { // a ready step waits for its confirmation
		x.setStatus(events.StateInputRequired, PhaseAwaiting, CauseConfirm)
	}
	return nil
}

// released starts a workflow that waited for a slot of its concurrency
// key: its first steps are dispatched.
func (x *tx) released(in Released) error {
	msg := in.Message
	if msg == "" {
		msg = "started: a slot of its concurrency key is free"
	}
	x.setStatus(events.StateWorking, PhaseExecuting, CauseRelease)
	x.eff.Message = "released"
	if err := x.emit(events.TypeStatus, "", events.Status{State: events.StateWorking, Message: msg}); err != nil {
		return err
	}
	return x.advance(CauseRelease)
}

// forked fills a new checkpoint from a revision of another workflow of the
// same tenant: the same plan, the outputs of the tasks completed by then
// (never re-run), and everything else dispatched afresh.
func (x *tx) forked(in Forked) error {
	cp := x.cp
	from := in.From
	cp.Parent = &from
	refused := in.Refused
	switch {
	case refused != "":
	case in.Source == nil:
		refused = fmt.Sprintf("cannot fork: workflow %q has no kept checkpoint revision %d", from.WorkflowID, from.Revision)
	case len(in.Source.Stages) == 0:
		refused = fmt.Sprintf("cannot fork: revision %d of %q has no valid plan", from.Revision, from.WorkflowID)
	}
	if refused != "" {
		if err := x.emit(events.TypeStatus, "", events.Status{State: events.StateSubmitted, Message: "fork requested", TraceID: cp.TraceID}); err != nil {
			return err
		}
		return x.fail(events.Error{Code: events.CodeInvalidRequest, Message: refused, Pointer: "/fork"}, CausePlan)
	}
	src := in.Source
	cp.Query, cp.Plan, cp.Stages = src.Query, src.Plan, src.Stages
	kept := 0
	for id, t := range src.Tasks {
		nt := &Task{Capability: t.Capability, Status: events.StateSubmitted, Confirm: in.Confirm[id]}
		if t.Status == events.StateCompleted {
			c := *t
			nt = &c
			kept++
		}
		cp.Tasks[id] = nt
	}
	x.setStatus(events.StateWorking, cp.Phase, CausePlan)
	if err := x.emit(events.TypeStatus, "", events.Status{State: events.StateSubmitted, Message: "fork accepted"}); err != nil {
		return err
	}
	if err := x.emit(events.TypeStatus, "", events.Status{State: events.StateWorking,
		Message: fmt.Sprintf("forked from %s at revision %d: %d completed steps kept, %d to run", from.WorkflowID, from.Revision, kept, len(cp.Tasks)-kept)}); err != nil {
		return err
	}
	return x.advance(CausePlan)
}
