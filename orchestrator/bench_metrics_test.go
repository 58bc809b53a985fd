package orchestrator_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
)

// BenchmarkMetrics runs 10-step echo chains with the orchestrator's and the
// worker's Prometheus metrics off and on, in one run, each on a server of
// its own, and reports per-step p50/p99 and steps/s (benchChains): the
// cost of metrics is the difference between the two. "interleaved"
// alternates the two chain by chain, which a shared machine's noise
// disturbs least.
//
//	go test -run '^$' -bench BenchmarkMetrics/interleaved -benchtime 400x -count 5 ./orchestrator/
func BenchmarkMetrics(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchChains(b, startMetered(b, false), 10) })
	b.Run("on", func(b *testing.B) { benchChains(b, startMetered(b, true), 10) })
	b.Run("interleaved", benchInterleaved)
}

// benchInterleaved alternates one chain without metrics and one with, so
// that load from elsewhere on the machine falls on both alike, and reports
// each side's per-step p50 and steps/s and the p50 overhead in percent.
func benchInterleaved(b *testing.B) {
	const n = 10
	stacks := [2]*stack{startMetered(b, false), startMetered(b, true)}
	p := chainPlan(n)
	var perStep [2][]time.Duration
	var spent [2]time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		side := i % 2
		wf := fmt.Sprintf("inter-%d", i)
		start := time.Now()
		submit(b, stacks[side].env.Bus, "default", wf, events.WorkflowSubmitted{Plan: p})
		if end := last(b, collect(b, stacks[side].env.Bus, "default", wf)); end.Type != events.TypeComplete {
			b.Fatalf("workflow ended %s", end.Type)
		}
		took := time.Since(start)
		spent[side] += took
		perStep[side] = append(perStep[side], took/n)
	}
	p50 := func(d []time.Duration) float64 {
		if len(d) == 0 {
			return 0
		}
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	off, on := p50(perStep[0]), p50(perStep[1])
	b.ReportMetric(off, "p50-µs/step-off")
	b.ReportMetric(on, "p50-µs/step-on")
	for side, name := range []string{"steps/s-off", "steps/s-on"} {
		if spent[side] > 0 {
			b.ReportMetric(float64(n*len(perStep[side]))/spent[side].Seconds(), name)
		}
	}
	if off > 0 {
		b.ReportMetric(100*(on-off)/off, "%p50-overhead")
	}
}

// startMetered is startStack with the metrics of both roles on a registry
// of their own when on.
func startMetered(b *testing.B, on bool) *stack {
	b.Helper()
	env := bustest.New(b)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() { cancel(); wg.Wait() })
	wcfg := agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{echo.Agent{}}, Logger: bustest.Logger(b)}
	ocfg := orchestrator.Config{Bus: env.Bus, Logger: bustest.Logger(b)}
	if on {
		reg := prometheus.NewRegistry()
		var err error
		if wcfg.Metrics, err = agents.NewMetrics(reg); err != nil {
			b.Fatal(err)
		}
		if ocfg.Metrics, err = orchestrator.NewMetrics(reg); err != nil {
			b.Fatal(err)
		}
	}
	w, err := agents.NewWorker(wcfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	o, err := orchestrator.New(ctx, ocfg)
	if err != nil {
		b.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
	return &stack{env: env, orch: o}
}
