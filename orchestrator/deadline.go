package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// arm sets the workflow's deadline and queues its durable timer: a
// deadline message on the workflow's reply subject that the reply consumer
// naks with a delay until it is due. It survives any orchestrator crash and
// needs no scan of the workflows.
func (o *Orchestrator) arm(cp *Checkpoint, timeout time.Duration) error {
	at := cp.CreatedAt.Add(timeout)
	cp.Deadline = &at
	subj, err := subjects.Reply(cp.TenantID, cp.WorkflowID)
	if err != nil {
		return err
	}
	data, err := json.Marshal(events.Deadline{At: at})
	if err != nil {
		return err
	}
	cp.Outbox = append(cp.Outbox, Outgoing{
		Subject: subj, MsgID: cp.TenantID + "/" + cp.WorkflowID + "/deadline",
		Type: events.TypeDeadline, Time: time.Now().UTC(), Data: data,
	})
	return nil
}

// expire fails a workflow whose deadline passed, and cancels its running
// steps: the control record stops redeliveries, the control message stops
// the steps running now.
func (o *Orchestrator) expire(ctx context.Context, tenant, workflow string) error {
	expired := false
	err := o.transition(ctx, tenant, workflow, func(cp *Checkpoint) error {
		if cp.Status.Terminal() {
			return errNoChange
		}
		expired = true
		for _, t := range cp.Tasks {
			if !t.Status.Terminal() {
				t.Status = events.StateCanceled
			}
		}
		limit := "its deadline"
		if cp.Deadline != nil {
			limit = fmt.Sprintf("its %s limit", cp.Deadline.Sub(cp.CreatedAt).Round(time.Millisecond))
		}
		return cp.fail(events.Error{Code: events.CodeTimeout, Message: "workflow timed out: it did not finish within " + limit})
	})
	if err != nil || !expired {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	const reason = "workflow timed out"
	if err := o.recordCancel(ctx, tenant, workflow, reason); err != nil {
		return err
	}
	subj, _ := subjects.Control(tenant, workflow)
	env, err := events.New(events.TypeControl, tenant+"/"+workflow+"/timeout", events.SourceOrchestrator, tenant, workflow, "",
		events.Control{Action: events.ActionCancel, Reason: reason})
	if err != nil {
		return err
	}
	return o.bus.Notify(subj, env)
}
