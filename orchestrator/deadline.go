package orchestrator

import (
	"context"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// timeoutReason is the cancel reason workers are given when a workflow's
// deadline passes.
const timeoutReason = "workflow timed out"

// expire fails a workflow whose deadline passed (workflow.Deadline), and
// cancels its running steps: the control record stops redeliveries, the
// control message stops the steps running now. Both go out before the
// failure is stored and published: a client that sees the failure and
// resumes at once must find the record there to clear, never have it
// written after its resume (the resumed steps would be dropped). Were the
// deadline stale (the workflow ended first), the record is withdrawn. The
// deadline's durable timer survives any orchestrator crash; should the
// server lose it, the checkpoint scan expires the workflow (scan.go).
func (o *Orchestrator) expire(ctx context.Context, tenant, wf string) error {
	cp, err := o.Checkpoint(ctx, tenant, wf)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cp.Status.Terminal() {
		return nil // ended before its deadline, or already expired
	}
	if err := o.recordCancel(ctx, tenant, wf, timeoutReason); err != nil {
		return err
	}
	subj, _ := subjects.Control(tenant, wf)
	env, err := events.New(events.TypeControl, tenant+"/"+wf+"/timeout", events.SourceOrchestrator, tenant, wf, "",
		events.Control{Action: events.ActionCancel, Reason: timeoutReason})
	if err != nil {
		return err
	}
	if err := o.bus.Notify(subj, env); err != nil {
		return err
	}
	a, err := o.apply(ctx, tenant, wf, workflow.Deadline{})
	if err == nil && a.StopSteps == "" {
		// Ended meanwhile: the cancel does not apply.
		if cerr := o.clearCancel(ctx, tenant, wf); cerr != nil {
			o.log.Warn("withdrawing a timeout's cancel that did not apply", "workflow", wf, "err", cerr)
		}
	}
	if isNotFound(err) {
		return nil
	}
	return err
}

// stopSteps tells workers to stop the running steps of a workflow that a
// stored transition ended (failed or rejected while some ran): the cancel
// record first, then the control message, both before the end is
// published, so that a client resuming it at once clears a record already
// written. The expiry does its own before its transition (expire). A
// failure here leaves the steps to run out, as they would have.
func (o *Orchestrator) stopSteps(ctx context.Context, cp *workflow.Checkpoint, eff workflow.Effects) {
	if eff.StopSteps == "" || eff.Outcome == "" || eff.StopSteps == timeoutReason {
		return
	}
	err := o.recordCancel(ctx, cp.TenantID, cp.WorkflowID, eff.StopSteps)
	if err == nil {
		subj, _ := subjects.Control(cp.TenantID, cp.WorkflowID)
		var env events.Envelope
		env, err = events.New(events.TypeControl, cp.TenantID+"/"+cp.WorkflowID+"/stop/"+string(eff.Outcome), events.SourceOrchestrator,
			cp.TenantID, cp.WorkflowID, "", events.Control{Action: events.ActionCancel, Reason: eff.StopSteps})
		if err == nil {
			err = o.bus.Notify(subj, env)
		}
	}
	if err != nil {
		o.log.Warn("stopping the running steps of an ended workflow", "workflow", cp.WorkflowID, "err", err)
	}
}
