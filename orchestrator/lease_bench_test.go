package orchestrator_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
)

// BenchmarkStepLease measures what the watchdog costs when nothing is lost:
// one timer per workflow, published with its first dispatch, delivered and
// naked at once, and delivered and acked a lease later. It runs 10-step echo chains one at a time and 16 at a time,
// with the watchdog on (the default lease) and off, side by side.
func BenchmarkStepLease(b *testing.B) {
	steps := make([]events.PlanStep, 10)
	for i := range steps {
		steps[i] = events.PlanStep{ID: fmt.Sprintf("s%d", i), Capability: "echo", Input: json.RawMessage(`"x"`)}
		if i > 0 {
			steps[i].DependsOn = []string{steps[i-1].ID}
		}
	}
	p := &events.Plan{Steps: steps}
	for _, parallel := range []int{1, 16} {
		for _, lease := range []time.Duration{-1, orchestrator.DefaultStepLease, time.Second} {
			name := fmt.Sprintf("inflight-%d/lease-%s", parallel, lease)
			if lease < 0 {
				name = fmt.Sprintf("inflight-%d/lease-off", parallel)
			}
			b.Run(name, func(b *testing.B) {
				env := bustest.New(b)
				startEcho(b, env)
				startOrchestrator(b, env, orchestrator.Config{StepLease: lease})
				b.ResetTimer()
				n := 0
				for b.Loop() {
					var wg sync.WaitGroup
					for j := range parallel {
						wf := fmt.Sprintf("lease-%d-%d", n, j)
						wg.Add(1)
						go func() {
							defer wg.Done()
							submit(b, env.Bus, "default", wf, events.WorkflowSubmitted{Plan: p})
							if end := last(b, collect(b, env.Bus, "default", wf)); end.Type != events.TypeComplete {
								b.Errorf("workflow ended %s", end.Type)
							}
						}()
					}
					wg.Wait()
					n++
				}
				b.ReportMetric(float64(10*parallel*b.N)/b.Elapsed().Seconds(), "steps/s")
			})
		}
	}
}
