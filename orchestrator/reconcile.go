package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	wf "github.com/agentbus/agentbus/workflow"
)

// The submission reconciler: acknowledged means handled. A submission the
// gateway answered 202 is stored in AGENTBUS_WORKFLOWS, a work-queue
// stream, until an orchestrator has created its checkpoint and acked it.
// After a node's SIGKILL the shared submissions consumer has been seen to
// hold one as delivered without ever redelivering it (as with steps,
// recover.go), and the workflow never starts. So the orchestrator that
// holds the scan lease (scan.go) also reads, each pass, the submissions
// stored for longer than SubmitBound — in a work-queue stream, exactly the
// ones no orchestrator finished — and for each that the submissions
// consumer has delivered (one it has not reached yet waits in a backlog,
// and is left to it):
//   - with no checkpoint: starts it from the stream itself, as the
//     consumer would have (handleSubmission; a consumer that delivers it
//     later finds the checkpoint and only acks), records a status event
//     with recovery "submission", and deletes the stored message;
//   - with a checkpoint: it was handled and only its ack went missing, so
//     the stored message is deleted.
//
// Each pass reads at most reconcileBudget messages, oldest first.

// reconcileBudget bounds the stored submissions one pass reads.
const reconcileBudget = 1000

// reconcileReport says what one pass of the submission reconciler did.
type reconcileReport struct {
	Read    int // stored submissions older than the bound
	Started int // of those, started from the stream
	Cleared int // of those, already handled: deleted
	Queued  int // of those, not delivered yet (a backlog): left alone
}

// reconcileSubmissions runs one pass; now - SubmitBound is the bound.
func (o *Orchestrator) reconcileSubmissions(ctx context.Context, now time.Time) (reconcileReport, error) {
	var r reconcileReport
	msgs, _, err := o.bus.StoredBefore(ctx, subjects.StreamWorkflows, subjects.AllSubmissions, 1, now.Add(-o.cfg.SubmitBound), reconcileBudget)
	r.Read = len(msgs)
	var errs []error
	for _, m := range msgs {
		// A submission its consumer has not delivered yet waits behind a
		// backlog: that is no stuck consumer, and neither is any after it.
		h, err := o.bus.ConsumerHolds(ctx, subjects.StreamWorkflows, subjects.ConsumerSubmissions, m.Sequence)
		if err == nil && h.Holding == bus.Queued {
			r.Queued = len(msgs) - r.Started - r.Cleared - len(errs)
			break
		}
		started, err := o.reconcileSubmission(ctx, m)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("submission %s (sequence %d): %w", m.MsgID, m.Sequence, err))
		case started:
			r.Started++
		default:
			r.Cleared++
		}
	}
	return r, errors.Join(append(errs, err)...)
}

// reconcileSubmission handles one stored submission past the bound and
// reports whether it started it.
func (o *Orchestrator) reconcileSubmission(ctx context.Context, m bus.StoredMessage) (bool, error) {
	log := o.log.With("subject", m.Subject, "sequence", m.Sequence, "msg_id", m.MsgID, "stored", m.Time)
	if m.Err != nil {
		// A malformed submission: the consumer terminates such a message,
		// and one still stored was held; record why, as the consumer would.
		o.malformedSubmission(ctx, m.Subject, m.Header, m.Err)
		log.Warn("recovery: a malformed submission held by its consumer: refused and deleted", "err", m.Err)
		return false, o.bus.DeleteStored(ctx, subjects.StreamWorkflows, m.Sequence, m.MsgID)
	}
	p, err := subjects.Parse(m.Subject)
	if err != nil {
		return false, o.bus.DeleteStored(ctx, subjects.StreamWorkflows, m.Sequence, m.MsgID)
	}
	workflow := m.Envelope.WorkflowID
	if workflow == "" {
		workflow = m.Envelope.ID
	}
	if _, _, err := o.load(ctx, p.Tenant, workflow); err == nil {
		log.Info("recovery: a submission already started was still stored (its ack was lost or its consumer held it): deleted", "workflow", workflow)
		return false, o.bus.DeleteStored(ctx, subjects.StreamWorkflows, m.Sequence, m.MsgID)
	} else if !isNotFound(err) {
		return false, err
	}
	log.Warn("recovery: a submission stored past the bound with no checkpoint: started from the stream", "tenant", p.Tenant, "workflow", workflow,
		"bound", o.cfg.SubmitBound)
	msg := fmt.Sprintf("recovery: submission stored at %s was not started by the submissions consumer within %s: started from the stream",
		m.Time.UTC().Format(time.RFC3339), o.cfg.SubmitBound)
	// The note is stored with the start (handleSubmission); a workflow
	// whose plan was refused has ended at once, and has none: its error
	// event ends its log.
	nctx := context.WithValue(ctx, recoveryNoteKey{}, wf.Note{Message: msg, Recovery: events.RecoverySubmission})
	if err := o.handleSubmission(nctx, bus.StoredDelivery(m)); err != nil && !errors.Is(err, bus.ErrPoison) {
		return false, err
	}
	o.cfg.Metrics.recovered(events.RecoverySubmission)
	return true, o.bus.DeleteStored(ctx, subjects.StreamWorkflows, m.Sequence, m.MsgID)
}
