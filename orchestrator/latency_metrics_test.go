package orchestrator_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
)

// TestPhaseLatencyInCompleteAndState runs a diamond and checks the phase
// latency in the complete event and in the stored state (what GET
// /v1/workflows/{id} serves): every field present, and sane — each step's
// wait and run within the action phase, planning and action within end to
// end, the longest wait within the sum.
func TestPhaseLatencyInCompleteAndState(t *testing.T) {
	s := startStack(t)
	submit(t, s.env.Bus, "default", "lat", events.WorkflowSubmitted{Plan: plan(
		step("A", "echo"), step("B", "echo", "A"), step("C", "echo", "A"), step("D", "echo", "B", "C"))})
	end := last(t, collect(t, s.env.Bus, "default", "lat"))
	if end.Type != events.TypeComplete {
		t.Fatalf("ended %s: %s", end.Type, end.Data)
	}
	var c events.Complete
	if err := json.Unmarshal(end.Data, &c); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"planning_ms", "queue_ms", "queue_max_ms", "action_ms", "end_to_end_ms", "steps"} {
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(end.Data, &raw)
		if _, ok := raw[field]; !ok {
			t.Errorf("complete event has no %s: %s", field, end.Data)
		}
	}
	checkLatency(t, "complete event", c.PhaseLatency, c.Steps)
	if c.DurationMS != c.EndToEndMS {
		t.Errorf("duration_ms %v differs from end_to_end_ms %v", c.DurationMS, c.EndToEndMS)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cp, err := s.orch.Checkpoint(ctx, "default", "lat")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(cp)
	var state struct {
		events.PhaseLatency
		Tasks map[string]events.StepLatency `json:"tasks"`
	}
	if err := json.Unmarshal(data, &state); err != nil {
		t.Fatal(err)
	}
	if state.PhaseLatency.EndToEndMS != c.EndToEndMS || state.PlanningMS != c.PlanningMS || state.QueueMS != c.QueueMS {
		t.Errorf("state %+v differs from the complete event %+v", state.PhaseLatency, c.PhaseLatency)
	}
	checkLatency(t, "state", state.PhaseLatency, state.Tasks)
	t.Logf("diamond of 4 echo steps: planning %.3f ms, queue %.3f ms (max %.3f), action %.3f ms, end to end %.3f ms",
		c.PlanningMS, c.QueueMS, c.QueueMaxMS, c.ActionMS, c.EndToEndMS)
}

func checkLatency(t *testing.T, where string, l events.PhaseLatency, steps map[string]events.StepLatency) {
	t.Helper()
	if len(steps) != 4 {
		t.Fatalf("%s: latency of %d steps, want 4: %+v", where, len(steps), steps)
	}
	const slack = 1 // ms: the workers' and the orchestrator's clocks are read at different moments
	if l.EndToEndMS <= 0 || l.ActionMS <= 0 || l.PlanningMS < 0 {
		t.Errorf("%s: %+v: a phase is not positive", where, l)
	}
	if l.PlanningMS+l.ActionMS > l.EndToEndMS+slack {
		t.Errorf("%s: planning %v + action %v > end to end %v", where, l.PlanningMS, l.ActionMS, l.EndToEndMS)
	}
	if l.QueueMaxMS > l.QueueMS {
		t.Errorf("%s: longest wait %v > sum %v", where, l.QueueMaxMS, l.QueueMS)
	}
	sum, longest := 0.0, 0.0
	for id, st := range steps {
		if st.RunMS <= 0 {
			t.Errorf("%s: step %s run_ms %v", where, id, st.RunMS)
		}
		if st.QueuedMS+st.RunMS > l.ActionMS+slack || st.QueuedMS+st.RunMS > l.EndToEndMS {
			t.Errorf("%s: step %s queued %v + run %v exceeds action %v / end to end %v", where, id, st.QueuedMS, st.RunMS, l.ActionMS, l.EndToEndMS)
		}
		sum += st.QueuedMS
		longest = max(longest, st.QueuedMS)
	}
	if diff := sum - l.QueueMS; diff > 0.001 || diff < -0.001 || longest != l.QueueMaxMS {
		t.Errorf("%s: queue_ms %v / max %v, but the steps' waits sum to %v / max %v", where, l.QueueMS, l.QueueMaxMS, sum, longest)
	}
}
