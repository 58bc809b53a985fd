package agents

import (
	"context"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// takeBack returns (and forgets) the step request handed back with the
// verdict on d's answer; nil if none.
func (w *Worker) takeBack(d *bus.Delivery) *events.Envelope {
	v, ok := w.handedBack.LoadAndDelete(d)
	if !ok {
		return nil
	}
	return v.(*events.Envelope)
}

// runHanded runs step requests an orchestrator handed back with its
// verdicts (eager dispatch, the orchestrator's eager.go) in the slot that
// answered, one after another for as long as each answer brings the
// next. A handed step is this worker's alone: nothing stores it but the
// workflow's checkpoint. One it cannot finish — it failed, or asks for a
// retry, or the worker is stopping — is published on its step subject as
// the orchestrator would have, and goes on the usual way.
func (w *Worker) runHanded(ctx context.Context, r *running, capability string, env events.Envelope) {
	for next := &env; next != nil; {
		subj, err := subjects.Step(next.TenantID, capability)
		if err != nil {
			w.log.Warn("step handed back on an invalid subject dropped (its lease recovers it)", "tenant", next.TenantID, "err", err)
			return
		}
		d := bus.HandedDelivery(subj, *next)
		w.cfg.Metrics.eager(capability)
		stop := w.renew(ctx, d, capability)
		err = w.traced(ctx, r, capability, d)
		stop()
		next = w.takeBack(d)
		if err != nil {
			w.demote(ctx, d, err)
			return
		}
	}
}

// renew tells an orchestrator, every AckWait/3 while a handed step runs,
// that this worker still runs it (events.TypeStepRunning, handed like an
// answer): no stored request shows the step alive, and its lease (at least
// AckWait) runs from the last word. It is what in-progress acks are to a
// pulled step. A word not taken is said again at the next tick. Nothing
// runs, and nothing is decoded, for a step that ends within AckWait/3:
// most of them.
func (w *Worker) renew(ctx context.Context, d *bus.Delivery, capability string) (stop func()) {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	every := w.cfg.AckWait / 3
	t := time.AfterFunc(every, func() {
		defer close(done)
		w.renewing(rctx, d, capability, every)
	})
	return func() {
		cancel()
		if !t.Stop() {
			<-done // renewing: wait for it to see the cancel
		}
	}
}

// renewing is renew's loop, from its first word on.
func (w *Worker) renewing(ctx context.Context, d *bus.Delivery, capability string, every time.Duration) {
	var sr events.StepRequested
	if err := d.Envelope.Unmarshal(&sr); err != nil {
		return
	}
	subj, err := subjects.Result(d.Envelope.TenantID, d.Envelope.WorkflowID)
	if err != nil {
		return
	}
	key := events.StepKey(d.Envelope.TenantID, d.Envelope.WorkflowID, sr.StepID, sr.Attempt)
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 1; ctx.Err() == nil; n++ {
		env, err := events.New(events.TypeStepRunning, fmt.Sprintf("%s/running/%d", key, n), events.SourceAgentPrefix+capability,
			d.Envelope.TenantID, d.Envelope.WorkflowID, sr.StepID, events.StepRunning{StepID: sr.StepID, Capability: capability, Attempt: sr.Attempt, Worker: w.cfg.Name})
		if err != nil {
			return
		}
		hctx, hcancel := context.WithTimeout(ctx, w.cfg.AckWait/4)
		if err := w.cfg.Bus.Hand(hctx, subj, env); err != nil && ctx.Err() == nil {
			w.log.Warn("a handed step's lease not renewed; trying again", "workflow", d.Envelope.WorkflowID, "step", sr.StepID, "err", err)
		}
		hcancel()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// demote publishes a handed step the worker did not finish on its step
// subject, with the dedup key its request would have had: another worker
// (or this one) pulls it, and retries and dead letters work as for any
// step. If the publish fails too, the step's lease recovers it.
func (w *Worker) demote(ctx context.Context, d *bus.Delivery, cause error) {
	w.log.Debug("handed step not finished: published on its step subject", "workflow", d.Envelope.WorkflowID, "step", d.Envelope.StepID, "err", cause)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.AckWait/2)
	defer cancel()
	if _, err := w.cfg.Bus.Publish(ctx, d.Subject, d.Envelope, d.Envelope.ID); err != nil {
		w.log.Warn("handed step not finished, nor published (its lease will recover it)", "workflow", d.Envelope.WorkflowID, "step", d.Envelope.StepID, "err", err)
	}
}
