package orchestrator

import (
	"context"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// expire fails a workflow whose deadline passed (workflow.Deadline), and
// cancels its running steps: the control record stops redeliveries, the
// control message stops the steps running now. The deadline's durable
// timer survives any orchestrator crash; should the server lose it, the
// checkpoint scan expires the workflow (scan.go).
func (o *Orchestrator) expire(ctx context.Context, tenant, wf string) error {
	a, err := o.apply(ctx, tenant, wf, workflow.Deadline{})
	if err != nil || a.StopSteps == "" {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	if err := o.recordCancel(ctx, tenant, wf, a.StopSteps); err != nil {
		return err
	}
	subj, _ := subjects.Control(tenant, wf)
	env, err := events.New(events.TypeControl, tenant+"/"+wf+"/timeout", events.SourceOrchestrator, tenant, wf, "",
		events.Control{Action: events.ActionCancel, Reason: a.StopSteps})
	if err != nil {
		return err
	}
	return o.bus.Notify(subj, env)
}
