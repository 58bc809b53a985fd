package workflow

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
)

// TestLatencyFiguresRounded: the phase latency's sums and differences are
// rounded to the microsecond, as each figure is measured, rather than
// carrying binary noise (8.514000000000001) into every checkpoint.
func TestLatencyFiguresRounded(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cp := &Checkpoint{CreatedAt: t0, Tasks: map[string]*Task{}}
	for i, q := range []float64{7.33, 0.58, 0.316, 0.288} {
		done := t0.Add(time.Duration(i+1) * 1777777 * time.Nanosecond)
		cp.Tasks[fmt.Sprint("s", i)] = &Task{QueuedMS: q, CompletedAt: &done}
	}
	cp.PhaseLatency = &events.PhaseLatency{PlanningMS: 0.553}
	cp.measure(t0.Add(9827*time.Microsecond), true)
	for name, v := range map[string]float64{"queue_ms": cp.PhaseLatency.QueueMS, "action_ms": cp.PhaseLatency.ActionMS, "end_to_end_ms": cp.PhaseLatency.EndToEndMS} {
		if s := strconv.FormatFloat(v, 'f', -1, 64); len(s) > len("12345.678") {
			t.Errorf("%s = %s, not rounded to the microsecond", name, s)
		}
	}
	if cp.PhaseLatency.QueueMS != 8.514 {
		t.Errorf("queue_ms = %v, want 8.514", cp.PhaseLatency.QueueMS)
	}
}
