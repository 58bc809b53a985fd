package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// Revision is one stored revision of a workflow's checkpoint.
type Revision struct {
	Revision   uint64      `json:"revision"`
	Checkpoint *Checkpoint `json:"checkpoint"`
}

// History returns every kept revision of a workflow's checkpoint, oldest
// first: the time-travel view.
func (o *Orchestrator) History(ctx context.Context, tenant, workflow string) ([]Revision, error) {
	key, err := subjects.CheckpointKey(tenant, workflow)
	if err != nil {
		return nil, err
	}
	entries, err := o.checkpoints.History(ctx, key)
	if err != nil {
		return nil, err
	}
	out := make([]Revision, 0, len(entries))
	for _, e := range entries {
		var cp Checkpoint
		if json.Unmarshal(e.Value, &cp) == nil {
			out = append(out, Revision{Revision: e.Revision, Checkpoint: &cp})
		}
	}
	return out, nil
}

// fork fills a new checkpoint from a revision of another workflow of the
// same tenant: the same plan, the outputs of the tasks completed by then
// (never re-run), and everything else dispatched afresh.
func (o *Orchestrator) fork(ctx context.Context, cp *Checkpoint, from events.ForkOf) error {
	cp.Parent = &from
	fail := func(msg string) error {
		if err := cp.emit(events.TypeStatus, "", events.Status{State: events.StateSubmitted, Message: "fork requested", TraceID: cp.TraceID}); err != nil {
			return err
		}
		return cp.fail(events.Error{Code: events.CodeInvalidRequest, Message: msg, Pointer: "/fork"})
	}
	revs, err := o.History(ctx, cp.TenantID, from.WorkflowID)
	if isNotFound(err) {
		return fail(fmt.Sprintf("cannot fork: no workflow %q", from.WorkflowID))
	}
	if err != nil {
		return err
	}
	var src *Checkpoint
	for _, r := range revs {
		if r.Revision == from.Revision {
			src = r.Checkpoint
		}
	}
	if src == nil {
		return fail(fmt.Sprintf("cannot fork: workflow %q has no kept checkpoint revision %d", from.WorkflowID, from.Revision))
	}
	if len(src.Stages) == 0 {
		return fail(fmt.Sprintf("cannot fork: revision %d of %q has no valid plan", from.Revision, from.WorkflowID))
	}
	cp.Query, cp.Plan, cp.Stages = src.Query, src.Plan, src.Stages
	kept := 0
	for id, t := range src.Tasks {
		nt := &Task{Capability: t.Capability, Status: events.StateSubmitted}
		if t.Status == events.StateCompleted {
			c := *t
			nt = &c
			kept++
		}
		cp.Tasks[id] = nt
	}
	cp.Status = events.StateWorking
	if err := cp.emit(events.TypeStatus, "", events.Status{State: events.StateSubmitted, Message: "fork accepted"}); err != nil {
		return err
	}
	if err := cp.emit(events.TypeStatus, "", events.Status{State: events.StateWorking,
		Message: fmt.Sprintf("forked from %s at revision %d: %d completed steps kept, %d to run", from.WorkflowID, from.Revision, kept, len(cp.Tasks)-kept)}); err != nil {
		return err
	}
	return o.advance(cp)
}
