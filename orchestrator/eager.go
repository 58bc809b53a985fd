package orchestrator

import (
	"context"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// Eager dispatch. A worker that hands a step's answer over (bus.HandOffer)
// has a slot free for as long as it waits for the verdict, and offers it:
// a step of the capability it answered for. When the transition that
// records the answer dispatches a step of that capability, and nothing
// waits for the capability's workers (so the step overtakes no one), the
// step request goes back to that worker with the verdict instead of into
// AGENTBUS_STEPS, and the worker runs it in the slot at once: no stored
// request, no pull, no delivery, no ack — on a cluster, one replicated
// write and four updates of the step consumer's state fewer. Temporal does
// the same for activities a workflow task schedules (eager activity
// dispatch).
//
// The checkpoint is what keeps the step: it records the step working, and
// its outbox marks the request handed (workflow.Outgoing.Handed), so that
// nobody publishes it. If the worker never runs it — it stopped waiting,
// or died — the watchdog finds neither a request nor a reply when the
// step's lease is due and dispatches it again (lease.go), as for a request
// the server lost. That lease is the one the worker's offer names (its
// AckWait, bus.Offer.Lease), not StepLease: a worker that dies running a
// handed step has it dispatched again about as soon as JetStream would
// deliver a pulled one again. A worker that cannot finish a handed step
// (it failed, or the worker stops) publishes the request as the
// orchestrator would have, and the step goes on the usual way. A handed
// step that runs long renews its lease (workflow.Renewed, every third of
// it) so that the watchdog leaves it be.

// offer is what a handed answer's worker offered to take back.
type offer struct {
	capability string
	until      time.Time
	// lease is how long its worker may go without a word while it runs
	// the step (bus.Offer.Lease); zero: StepLease.
	lease time.Duration
	// answer is the id of the answer the offer came with.
	answer string
}

// offerMargin is how long before its sender stops waiting an offer is no
// longer taken: a step handed back after that would wait for its lease. A
// transition takes a millisecond or a few; a worker waits HandWait (2 s),
// at most a quarter of its AckWait.
const offerMargin = 100 * time.Millisecond

// offered reads a handed answer's offer; nil if it has none, or one that
// runs out too soon.
func (o *Orchestrator) offered(m bus.Handed) *offer {
	if m.Offer == "" || o.cfg.StepLease <= 0 || m.OfferUntil.IsZero() || time.Until(m.OfferUntil) < offerMargin {
		return nil
	}
	return &offer{capability: m.Offer, until: m.OfferUntil, lease: m.OfferLease, answer: m.Env.ID}
}

// handBack marks the first step request of eff's outbox that off can take
// as handed, and returns it as sent; nil if none. Only a request on the
// capability's step subject (not parked) qualifies, and only while
// nothing waits for the capability's workers.
func (o *Orchestrator) handBack(cp *workflow.Checkpoint, eff *workflow.Effects, off *offer) *events.Envelope {
	if off == nil || time.Until(off.until) < offerMargin {
		return nil
	}
	subj, err := subjects.Step(cp.TenantID, off.capability)
	if err != nil {
		return nil
	}
	for i := range eff.Outbox {
		m := &eff.Outbox[i]
		if m.Type != events.TypeStepRequested || m.Subject != subj || m.At != nil {
			continue
		}
		if !o.admission.idle(off.capability) {
			return nil
		}
		m.Handed = true
		if t := cp.Tasks[m.StepID]; t != nil {
			t.HandedWith, t.HandedLeaseMS = off.answer, off.lease.Milliseconds()
		}
		env := envelopes(cp, []workflow.Outgoing{*m})[0].Env
		return &env
	}
	return nil
}

// reclaim dispatches again, at once, a step handed back with the verdict
// on an answer that has now come through the replies stream and found its
// attempt already recorded. A worker sends an answer that way only when
// its hand got no verdict (the orchestrator died before it answered, could
// not publish, or answered too late): a request in a verdict it never got
// was never taken, and waiting for its lease would hold the workflow that
// long. The step is given up as lost (workflow.Lost) and dispatched as its
// next attempt, the way the watchdog would; a worker that did take it
// cannot have sent this copy.
func (o *Orchestrator) reclaim(ctx context.Context, tenant, wf, answer string) error {
	cp, _, err := o.load(ctx, tenant, wf)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for id, t := range cp.Tasks {
		if t.HandedWith != answer || t.Status != events.StateWorking || t.RenewedAt != nil {
			continue
		}
		o.log.Info("a step handed back with a verdict its worker never got: dispatched again", "tenant", tenant, "workflow", wf, "step", id, "answer", answer)
		if err := o.redispatch(ctx, tenant, wf, id, t.Attempt); err != nil {
			return err
		}
	}
	return nil
}

// published is what of an outbox is published: all but a request handed
// back.
func published(out []workflow.Outgoing) []workflow.Outgoing {
	for i, m := range out {
		if m.Handed {
			rest := make([]workflow.Outgoing, 0, len(out)-1)
			rest = append(rest, out[:i]...)
			for _, m := range out[i+1:] {
				if !m.Handed {
					rest = append(rest, m)
				}
			}
			return rest
		}
	}
	return out
}
