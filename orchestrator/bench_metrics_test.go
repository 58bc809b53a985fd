package orchestrator_test

import (
	"context"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/orchestrator"
)

// BenchmarkMetrics runs 10-step echo chains with the orchestrator's and the
// worker's Prometheus metrics off and on, in one run, each on a server of
// its own, and reports per-step p50/p99 and steps/s (benchChains): the
// cost of metrics is the difference between the two.
//
//	go test -run '^$' -bench BenchmarkMetrics -benchtime 200x -count 3 ./orchestrator/
func BenchmarkMetrics(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchChains(b, startMetered(b, false), 10) })
	b.Run("on", func(b *testing.B) { benchChains(b, startMetered(b, true), 10) })
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
