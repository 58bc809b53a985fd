package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	sdk "github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
)

// benchOne submits workflow id and waits for its outcome: the outcome
// and "" when it completed with each step's output once, else what went
// wrong.
func benchOne(ctx context.Context, t *benchTarget, plan events.Plan, id string, timeout time.Duration) (benchOutcome, string) {
	done := t.follower.expect(id)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	sctx, cancel := context.WithTimeout(ctx, timeout)
	_, err := t.c.Submit(sctx, sdk.Submission{WorkflowID: id, Plan: &plan})
	cancel()
	if err != nil {
		t.follower.forget(id)
		return benchOutcome{}, "submit: " + strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	t.follower.submitted(ctx, id)
	select {
	case o := <-done:
		if o.fromState && o.state == events.StateCompleted {
			if err := fillFromState(ctx, t.c, id, &o); err != nil {
				return o, fmt.Sprintf("completed, but reading its state failed: %v", err)
			}
		}
		return o, checkOutcome(plan, o)
	case <-deadline.C:
	case <-ctx.Done():
	}
	t.follower.forget(id)
	return benchOutcome{}, lostMessage(ctx, t.c, id, timeout)
}

// fillFromState reads a completed workflow's steps from its state: their
// outputs, latencies and attempts (the HTTP tenant feed says only that it
// ended).
func fillFromState(ctx context.Context, c *sdk.Client, id string, o *benchOutcome) error {
	st, err := c.State(ctx, id)
	if err != nil {
		return err
	}
	o.outputs = make(map[string]bool, len(st.Tasks))
	o.steps = make(map[string]stepTime, len(st.Tasks))
	for sid, task := range st.Tasks {
		if task.Status == events.StateCompleted && len(task.Output) > 0 {
			o.outputs[sid] = true
			o.steps[sid] = stepTime{queuedMS: task.QueuedMS, runMS: task.RunMS}
		}
		if task.Attempt > 1 {
			o.retried++
		}
	}
	return nil
}

// checkOutcome is "" for a workflow that completed with every step's
// output, else what is wrong.
func checkOutcome(plan events.Plan, o benchOutcome) string {
	if o.state != events.StateCompleted {
		if o.state == "" {
			return o.message
		}
		return strings.TrimSuffix(fmt.Sprintf("ended %s: %s", o.state, o.message), ": ")
	}
	var missing []string
	for _, s := range plan.Steps {
		if !o.outputs[s.ID] {
			missing = append(missing, s.ID)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("completed without the output of step %s", strings.Join(missing, ", "))
	}
	return ""
}

// planTimes are the latencies of the plan's steps that o carries.
func planTimes(plan events.Plan, o benchOutcome) []stepTime {
	out := make([]stepTime, 0, len(plan.Steps))
	for _, s := range plan.Steps {
		if st, ok := o.steps[s.ID]; ok {
			out = append(out, st)
		}
	}
	return out
}

// lostMessage says how far a workflow that did not end in time got, from
// its state.
func lostMessage(ctx context.Context, c *sdk.Client, id string, timeout time.Duration) string {
	what := fmt.Sprintf("not complete %s after its submission (--timeout)", timeout)
	if ctx.Err() != nil {
		what = "bench was interrupted before it ended"
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	st, err := c.State(sctx, id)
	switch {
	case errors.Is(err, sdk.ErrNotFound):
		return what + "; no orchestrator recorded it (it has no state)"
	case err != nil:
		return fmt.Sprintf("%s; its state could not be read: %v", what, err)
	}
	var waiting []string
	for sid, task := range st.Tasks {
		if task.Status != events.StateCompleted {
			waiting = append(waiting, fmt.Sprintf("%s (%s, %s)", sid, task.Capability, task.Status))
		}
	}
	sort.Strings(waiting)
	if len(waiting) > 4 {
		waiting = append(waiting[:4], fmt.Sprintf("%d more", len(waiting)-4))
	}
	msg := fmt.Sprintf("%s; status %s", what, st.Status)
	if len(waiting) > 0 {
		msg += ", steps not done: " + strings.Join(waiting, ", ")
	}
	return msg
}

// sleepUntil waits until t, and is false if ctx ended or stop (if set)
// comes first.
func sleepUntil(ctx context.Context, t, stop time.Time) bool {
	if !stop.IsZero() && !t.Before(stop) {
		return false
	}
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// problemsMessage is the error bench exits with: how many workflows did
// not complete, naming the first few (the report lists them all).
func problemsMessage(r *benchReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d workflows did not complete:", len(r.Problems), r.Started)
	for i, p := range r.Problems {
		if i == 5 {
			fmt.Fprintf(&b, "\n  … and %d more (the report lists them all)", len(r.Problems)-5)
			break
		}
		fmt.Fprintf(&b, "\n  %s: %s", p.WorkflowID, p.Problem)
	}
	return b.String()
}
