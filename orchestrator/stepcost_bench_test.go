package orchestrator_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
)

// BenchmarkStepCost measures what one step costs, per process role: the
// orchestrator and the worker each get a connection of their own, and
// their bus.Ops say how many messages each published, how many KV reads
// and writes and look-ups it made, how many consumed messages it
// answered, and how many round trips it waited for in series, per step.
// CPU is the whole test process's (server, orchestrator, worker and the
// benchmark's own follower), per step.
//
//	go test -run '^$' -bench StepCost -benchtime 200x ./orchestrator
func BenchmarkStepCost(b *testing.B) {
	for _, c := range []struct {
		name     string
		steps    int
		parallel int
	}{{"chain-1", 1, 1}, {"chain-10", 10, 1}, {"chain-10-x16", 10, 16}} {
		b.Run(c.name, func(b *testing.B) {
			env := bustest.New(b)
			ob, wb := connect(b, env), connect(b, env)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			b.Cleanup(func() { cancel(); wg.Wait() })
			log := bustest.Logger(b)
			w, err := agents.NewWorker(agents.WorkerConfig{Bus: wb, Agents: []agents.Agent{echo.Agent{}}, Logger: log})
			if err != nil {
				b.Fatal(err)
			}
			if err := w.Start(ctx); err != nil {
				b.Fatal(err)
			}
			o, err := orchestrator.New(ctx, orchestrator.Config{Bus: ob, Logger: log})
			if err != nil {
				b.Fatal(err)
			}
			wg.Add(2)
			go func() { defer wg.Done(); _ = w.Run(ctx) }()
			go func() { defer wg.Done(); _ = o.Run(ctx) }()
			p := chainPlan(c.steps)
			run := func(wf string) {
				submit(b, env.Bus, "default", wf, events.WorkflowSubmitted{Plan: p})
				if end := last(b, collect(b, env.Bus, "default", wf)); end.Type != events.TypeComplete {
					b.Fatalf("%s ended %s", wf, end.Type)
				}
			}
			run("warm") // consumers made, caches filled
			o0, w0, cpu0 := ob.Ops(), wb.Ops(), cpu()
			b.ResetTimer()
			n := 0
			for b.Loop() {
				var g sync.WaitGroup
				for k := range c.parallel {
					g.Add(1)
					go func() { defer g.Done(); run(fmt.Sprintf("cost-%d-%d", n, k)) }()
				}
				g.Wait()
				n++
			}
			b.StopTimer()
			steps := float64(n * c.parallel * c.steps)
			report := func(role string, o bus.Ops) {
				b.ReportMetric(float64(o.Published)/steps, role+"-published/step")
				b.ReportMetric(float64(o.KVReads+o.KVWrites)/steps, role+"-kv/step")
				b.ReportMetric(float64(o.Lookups)/steps, role+"-lookups/step")
				b.ReportMetric(float64(o.Waits)/steps, role+"-waits/step")
			}
			report("orch", ob.Ops().Sub(o0))
			report("worker", wb.Ops().Sub(w0))
			b.ReportMetric(float64((cpu()-cpu0).Microseconds())/steps, "cpu-µs/step")
		})
	}
}

// connect opens another connection to env's server: a process role of
// its own.
func connect(t testing.TB, env *bustest.Env) *bus.Bus {
	t.Helper()
	b, err := bus.Connect(context.Background(), bus.Config{URL: env.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// cpu is the process's user and system CPU time so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
