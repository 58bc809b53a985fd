package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schedule"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// Metadata keys a schedule's run carries beside events.MetadataScheduleID.
const (
	// MetadataScheduleSlot is the run's slot (RFC 3339).
	MetadataScheduleSlot = "schedule_slot"
	// MetadataScheduleFire is who fired it: scheduled, manual or backfill.
	MetadataScheduleFire = "schedule_fire"
)

// bufferPoll is how often a buffered run (buffer_one) looks whether the
// run it waits for has ended: its fire is held on the consumer, durably.
const bufferPoll = time.Second

// unseenGrace is how long a run whose checkpoint is not stored yet counts
// as running (its submission waits for an orchestrator); past it the run
// is taken to be gone (its checkpoint purged).
const unseenGrace = 5 * time.Minute

// runSchedules consumes the schedules' fires until ctx ends: one
// orchestrator handles each, whichever it is.
func (o *Orchestrator) runSchedules(ctx context.Context) error {
	return o.bus.ConsumeTimers(ctx, bus.ConsumeConfig{
		Stream: subjects.StreamSchedules, Durable: subjects.ConsumerFires, Filter: subjects.AllFires,
		AckWait: o.cfg.AckWait, Concurrency: o.cfg.Concurrency, MaxDeliver: -1,
	}, o.handleFire)
}

// handleFire starts a schedule's run for a slot, as its pause switch,
// jitter and overlap policy say. The run's workflow id is the slot's
// (schedule.RunID): a fire delivered twice, or a slot backfilled twice,
// submits the same workflow, which starts once.
func (o *Orchestrator) handleFire(ctx context.Context, d *bus.Delivery) error {
	env := d.Envelope
	if env.Type != events.TypeScheduleFire {
		return fmt.Errorf("%w: %s on a fire subject", bus.ErrPoison, env.Type)
	}
	p, err := subjects.Parse(d.Subject)
	if err != nil || p.Kind != "fire" || env.TenantID != p.Tenant {
		return fmt.Errorf("%w: fire on %q for tenant %q", bus.ErrPoison, d.Subject, env.TenantID)
	}
	var f events.ScheduleFire
	if err := env.Unmarshal(&f); err != nil {
		return fmt.Errorf("%w: %w", bus.ErrPoison, err)
	}
	tenant, id := p.Tenant, p.Last
	sp, _, err := o.schedules.Get(ctx, tenant, id)
	if errors.Is(err, schedule.ErrNotFound) {
		return nil // deleted since
	}
	if err != nil {
		return err
	}
	tm, err := sp.Check()
	if err != nil {
		return fmt.Errorf("%w: schedule %s: %w", bus.ErrPoison, id, err)
	}
	var slot time.Time
	switch f.Kind {
	case events.FireScheduled:
		if sp.Paused || f.Generation != sp.Generation {
			o.log.Debug("fire of a paused or re-armed schedule dropped", "tenant", tenant, "schedule", id, "generation", f.Generation)
			return nil
		}
		if slot, err = tm.SlotOf(d.Header("Nats-Schedule-Next")); err != nil {
			return fmt.Errorf("%w: %w", bus.ErrPoison, err)
		}
		if wait := time.Until(slot.Add(tm.Delay(id, slot))); wait > 0 {
			return &bus.RetryAfter{Delay: wait} // jitter
		}
		if err := o.catchUp(ctx, tenant, sp, tm, slot, f.Overlap); err != nil {
			return err
		}
	case events.FireManual, events.FireBackfill:
		if f.Slot == nil {
			return fmt.Errorf("%w: a %s fire without a slot", bus.ErrPoison, f.Kind)
		}
		slot = f.Slot.UTC()
	default:
		return fmt.Errorf("%w: fire kind %q", bus.ErrPoison, f.Kind)
	}
	overlap := sp.Overlap
	if f.Overlap != "" {
		overlap = schedule.Overlap(f.Overlap)
	}
	return o.fire(ctx, tenant, sp, f.Kind, slot, overlap)
}

// fire applies the overlap policy to run's slot and starts, skips, holds
// or cancels as it decides.
func (o *Orchestrator) fire(ctx context.Context, tenant string, sp schedule.Spec, kind string, slot time.Time, overlap schedule.Overlap) error {
	id := sp.ScheduleID
	run := schedule.RunID(id, kind, slot)
	st, _, err := o.schedules.State(ctx, tenant, id)
	if err != nil {
		return err
	}
	if st.Has(run) {
		return nil // started by an earlier delivery
	}
	prev := st.LastWorkflowID
	running := prev != "" && prev != run && o.runRunning(ctx, tenant, prev, st.LastStartedAt)
	decision := schedule.Decide(overlap, running, st.Buffered, run)
	now := time.Now().UTC()
	switch decision {
	case schedule.Skip:
		why := fmt.Sprintf("slot %s skipped: run %s has not ended (overlap %s)", slot.Format(time.RFC3339), prev, overlap)
		if overlap == schedule.OverlapBufferOne {
			why = fmt.Sprintf("slot %s skipped: run %s waits already for %s to end (overlap %s)", slot.Format(time.RFC3339), st.Buffered, prev, overlap)
		}
		_, err := o.schedules.UpdateState(ctx, tenant, id, func(s *schedule.State) bool {
			s.Fires++
			s.Skipped++
			s.LastFireAt, s.LastSkip = &now, why
			scheduled(s, kind, slot)
			return true
		})
		o.log.Info("schedule slot skipped", "tenant", tenant, "schedule", id, "slot", slot, "running", prev, "overlap", overlap)
		return err
	case schedule.Wait:
		if st.Buffered != run {
			_, err := o.schedules.UpdateState(ctx, tenant, id, func(s *schedule.State) bool {
				if s.Buffered != "" && s.Buffered != run {
					return false
				}
				s.Buffered = run
				return true
			})
			if err != nil {
				return err
			}
		}
		return &bus.RetryAfter{Delay: bufferPoll}
	case schedule.CancelThenStart:
		reason := fmt.Sprintf("canceled by schedule %s: slot %s starts (overlap cancel_previous)", id, slot.Format(time.RFC3339))
		if err := o.cancelRun(ctx, tenant, prev, reason); err != nil {
			return err
		}
	}
	if err := o.submitRun(ctx, tenant, sp, kind, slot, run); err != nil {
		return err
	}
	_, err = o.schedules.UpdateState(ctx, tenant, id, func(s *schedule.State) bool {
		if s.Has(run) {
			return false
		}
		s.Fires++
		if decision == schedule.CancelThenStart {
			s.Canceled++
		}
		s.LastFireAt = &now
		s.Start(run, slot, now)
		scheduled(s, kind, slot)
		return true
	})
	o.log.Info("schedule run started", "tenant", tenant, "schedule", id, "workflow", run, "kind", kind, "decision", decision)
	return err
}

// scheduled notes a scheduled slot handled (started or skipped): a
// catch-up starts after the newest.
func scheduled(s *schedule.State, kind string, slot time.Time) {
	if kind == events.FireScheduled && (s.LastScheduled == nil || slot.After(*s.LastScheduled)) {
		s.LastScheduled = &slot
	}
}

// catchUp starts, before a scheduled fire's own slot, the slots no server
// fired since the schedule's last scheduled slot (all were down past
// them) that its catch-up window still covers, oldest first, each under
// the overlap policy as if it had fired then. A run waiting for the
// previous one (buffer_one) has the fire delivered again later; runs
// already started are not started again.
func (o *Orchestrator) catchUp(ctx context.Context, tenant string, sp schedule.Spec, tm schedule.Timing, slot time.Time, fireOverlap string) error {
	if tm.Catchup <= 0 {
		return nil
	}
	st, _, err := o.schedules.State(ctx, tenant, sp.ScheduleID)
	if err != nil || st.LastScheduled == nil {
		return err // never fired before: nothing was missed
	}
	missed := tm.Missed(*st.LastScheduled, slot, sp.ArmedAt, time.Now())
	if len(missed) == 0 {
		return nil
	}
	overlap := sp.Overlap
	if fireOverlap != "" {
		overlap = schedule.Overlap(fireOverlap)
	}
	o.log.Info("schedule catching up on slots no server fired", "tenant", tenant, "schedule", sp.ScheduleID,
		"slots", len(missed), "from", missed[0], "to", missed[len(missed)-1])
	for _, m := range missed {
		if err := o.fire(ctx, tenant, sp, events.FireScheduled, m, overlap); err != nil {
			return err
		}
	}
	return nil
}

// runRunning reports whether a schedule's run has not ended: its
// checkpoint is not terminal, or not stored yet and the run started
// within unseenGrace.
func (o *Orchestrator) runRunning(ctx context.Context, tenant, wf string, started *time.Time) bool {
	cp, _, err := o.loadFrom(ctx, tenant, wf, true)
	if isNotFound(err) {
		return started != nil && time.Since(*started) < unseenGrace
	}
	return err != nil || !cp.Status.Terminal()
}

// cancelRun cancels a schedule's previous run, as a preemption does: the
// control record first, so that a run not yet created starts canceled.
func (o *Orchestrator) cancelRun(ctx context.Context, tenant, wf, reason string) error {
	if err := o.recordCancel(ctx, tenant, wf, reason); err != nil {
		return err
	}
	a, err := o.apply(ctx, tenant, wf, workflow.Cancel{Reason: reason})
	var refused *workflow.IllegalError
	if err == nil && a.Status != events.StateCanceled || errors.As(err, &refused) {
		_ = o.clearCancel(ctx, tenant, wf) // it had ended already
		return nil
	}
	if err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

// submitRun submits a schedule's run as any submission is (api.Submit):
// the template with the schedule's id, slot and fire kind in its
// metadata, for the schedule's user.
func (o *Orchestrator) submitRun(ctx context.Context, tenant string, sp schedule.Spec, kind string, slot time.Time, run string) error {
	md := maps.Clone(sp.Workflow.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	md[events.MetadataScheduleID] = sp.ScheduleID
	md[MetadataScheduleSlot] = slot.Format(time.RFC3339)
	md[MetadataScheduleFire] = kind
	sub := events.WorkflowSubmitted{Query: sp.Workflow.Query, Plan: sp.Workflow.Plan, Metadata: md,
		TimeoutMS: sp.Workflow.TimeoutMS, Priority: sp.Workflow.Priority, User: sp.User}
	_, err := api.Submit(ctx, o.bus, events.SourceOrchestrator, tenant, run, sub)
	if err != nil {
		return fmt.Errorf("orchestrator: schedule %s run %s (slot %s): %w", sp.ScheduleID, run, strconv.FormatInt(slot.Unix(), 10), err)
	}
	return nil
}
