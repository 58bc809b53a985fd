package workflow

import (
	"math"
	"time"

	"github.com/agentbus/agentbus/events"
)

// Phase latency: where a workflow's time went, kept in its checkpoint and
// sent in its complete event (events.PhaseLatency).
//
//	planning_ms    the submission handled → the plan's first dispatch (planner, discovery, checks)
//	queue_ms       the steps' waits between their dispatch and a worker starting them, summed;
//	queue_max_ms   the longest of them
//	action_ms      the first dispatch → the last step finished
//	end_to_end_ms  the submission handled → the workflow completed
//
// The steps' waits and runs are the workers' measures (their reply's
// queued_ms and duration_ms) of the attempt that counted. Steps of one
// stage run at once, so queue_ms may exceed action_ms; for one step,
// queued_ms + run_ms ≤ action_ms ≤ end_to_end_ms.

// planned notes the end of planning.
func (cp *Checkpoint) planned(now time.Time) {
	cp.PhaseLatency = &events.PhaseLatency{PlanningMS: msBetween(cp.CreatedAt, now)}
}

// measure brings the phase latency up to date after a step finished, or
// at the end (final).
func (cp *Checkpoint) measure(now time.Time, final bool) {
	if cp.PhaseLatency == nil {
		cp.PhaseLatency = &events.PhaseLatency{} // a fork: no planning of its own
	}
	l := cp.PhaseLatency
	l.QueueMS, l.QueueMaxMS = 0, 0
	var last time.Time
	for _, t := range cp.Tasks {
		l.QueueMS += t.QueuedMS
		l.QueueMaxMS = max(l.QueueMaxMS, t.QueuedMS)
		if t.CompletedAt != nil && t.CompletedAt.After(last) {
			last = *t.CompletedAt
		}
	}
	l.QueueMS = roundMS(l.QueueMS) // a sum: 8.514000000000001 otherwise
	start := cp.CreatedAt.Add(time.Duration(l.PlanningMS * float64(time.Millisecond)))
	if !last.IsZero() {
		l.ActionMS = msBetween(start, last)
	}
	if final {
		l.EndToEndMS = msBetween(cp.CreatedAt, now)
		l.ActionMS = roundMS(min(max(l.ActionMS, 0), l.EndToEndMS-l.PlanningMS))
	}
}

// latency is the phase latency for the complete event, with every step's.
func (cp *Checkpoint) latency() events.PhaseLatency {
	var l events.PhaseLatency
	if cp.PhaseLatency != nil {
		l = *cp.PhaseLatency
	}
	l.Steps = make(map[string]events.StepLatency, len(cp.Tasks))
	for id, t := range cp.Tasks {
		l.Steps[id] = events.StepLatency{QueuedMS: t.QueuedMS, RunMS: t.RunMS}
	}
	return l
}

// msBetween is b − a in milliseconds with microsecond precision, never
// negative.
func msBetween(a, b time.Time) float64 {
	return max(float64(b.Sub(a).Microseconds())/1000, 0)
}

// roundMS rounds milliseconds to the microsecond, as msBetween measures
// them: sums and differences of such figures are not exact in binary, and
// their noise cost bytes in every checkpoint and complete event.
func roundMS(ms float64) float64 { return math.Round(ms*1000) / 1000 }
