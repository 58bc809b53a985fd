package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// arm sets the workflow's deadline and queues its durable timer: a
// deadline message on the workflow's timer subject that the timer consumer
// naks with a delay until it is due (timer.go). It survives any
// orchestrator crash; should the server lose it, the checkpoint scan
// expires the workflow (scan.go).
func (o *Orchestrator) arm(cp *Checkpoint, timeout time.Duration) error {
	at := cp.CreatedAt.Add(timeout)
	cp.Deadline = &at
	m, err := deadlineTimer(cp, at)
	if err != nil {
		return err
	}
	cp.Outbox = append(cp.Outbox, m)
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
