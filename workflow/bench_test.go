package workflow_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// BenchmarkApply measures the engine: a 10-step chain planned and run to
// completion, one Apply per reply (11 transitions a workflow); "apply" is
// Apply alone, "json" adds the checkpoint's JSON round trip before each
// reply, as the orchestrator stores and reads it.
func BenchmarkApply(b *testing.B) {
	for _, roundTrip := range []bool{false, true} {
		name := "apply"
		if roundTrip {
			name = "json"
		}
		b.Run(name, func(b *testing.B) { benchApply(b, roundTrip) })
	}
}

func benchApply(b *testing.B, roundTrip bool) {
	plan := events.Plan{}
	for i := range 10 {
		s := events.PlanStep{ID: fmt.Sprintf("s%d", i), Capability: "echo", Input: json.RawMessage(`{"q":"x"}`)}
		if i > 0 {
			s.DependsOn = []string{fmt.Sprintf("s%d", i-1)}
		}
		plan.Steps = append(plan.Steps, s)
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		cp := fresh("bench")
		if _, err := workflow.Apply(cp, workflow.Planned{Plan: plan}, now, policy); err != nil {
			b.Fatal(err)
		}
		for _, s := range plan.Steps {
			if roundTrip {
				data, _ := json.Marshal(cp)
				var c workflow.Checkpoint
				if err := json.Unmarshal(data, &c); err != nil {
					b.Fatal(err)
				}
				cp = &c
			}
			in := workflow.Completed{StepCompleted: events.StepCompleted{StepID: s.ID, Attempt: 1, Worker: "w", Output: json.RawMessage(`{"answer":"y"}`)}}
			if _, err := workflow.Apply(cp, in, now, policy); err != nil {
				b.Fatal(err)
			}
		}
		if cp.Status != events.StateCompleted {
			b.Fatalf("status %s", cp.Status)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*11), "µs/transition")
}
