package orchestrator

import (
	"context"
	"fmt"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// History returns every kept revision of a workflow's checkpoint, oldest
// first: the time-travel view.
func (o *Orchestrator) History(ctx context.Context, tenant, wf string) ([]workflow.Revision, error) {
	key, err := subjects.CheckpointKey(tenant, wf)
	if err != nil {
		return nil, err
	}
	entries, err := o.checkpoints.History(ctx, key)
	if err != nil {
		return nil, err
	}
	out := make([]workflow.Revision, 0, len(entries))
	for _, e := range entries {
		var cp workflow.Checkpoint
		if workflow.UnmarshalCheckpoint(e.Value, &cp) == nil {
			out = append(out, workflow.Revision{Revision: e.Revision, Checkpoint: &cp})
		}
	}
	return out, nil
}

// forkOf looks up the revision a fork starts from (another workflow of the
// same tenant): the engine's input, which refuses the fork if it is
// missing.
func (o *Orchestrator) forkOf(ctx context.Context, tenant, role string, from events.ForkOf) (workflow.Forked, error) {
	in := workflow.Forked{From: from}
	revs, err := o.History(ctx, tenant, from.WorkflowID)
	if isNotFound(err) {
		in.Refused = fmt.Sprintf("cannot fork: no workflow %q", from.WorkflowID)
		return in, nil
	}
	if err != nil {
		return in, err
	}
	for _, r := range revs {
		if r.Revision == from.Revision {
			in.Source = r.Checkpoint
		}
	}
	if in.Source != nil {
		// The fork runs the source's plan for whoever forked it: the
		// tool permissions apply to that role now.
		var pe *workflow.PlanError
		if in.Confirm, pe = o.permit(tenant, role, in.Source.Plan); pe != nil {
			in.Refused = "cannot fork: " + pe.Message
		}
	}
	return in, nil
}
