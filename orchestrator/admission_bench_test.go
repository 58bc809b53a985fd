package orchestrator_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/orchestrator"
)

// BenchmarkNoisyNeighbour measures what flow control is for: a quiet
// tenant submits 50 one-step workflows (20 ms sleep steps) at 20 a second,
// alone and then behind a noisy tenant's backlog of 5,000 queued steps on
// the same capability (8 worker slots), with flow control on and off. It
// reports the quiet tenant's p50 and p95 end to end in each case and the
// ratio of p95 with the backlog to p95 alone.
//
//	go test -run '^$' -bench NoisyNeighbour -benchtime 1x ./orchestrator
//
// NOISY (env) sets the backlog (default 5000), WORKERS the workers (default
// 1; their 8 slots are shared among them), FLOW_WINDOW the window.
func BenchmarkNoisyNeighbour(b *testing.B) {
	backlog, workers := envInt("NOISY", 5000), envInt("WORKERS", 1)
	window, _ := strconv.ParseFloat(os.Getenv("FLOW_WINDOW"), 64)
	for _, off := range []bool{false, true} {
		name := "flow-control"
		if off {
			name = "flow-control-off"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				env := flowStackN(b, workers, 8/workers, orchestrator.Config{FlowControlOff: off, FlowWindow: window})
				tl := watchCompletions(b, env)
				alone := quietRun(b, env, tl, "alone")
				for i := range backlog {
					submit(b, env.Bus, "noisy", fmt.Sprintf("n%d", i), sleeper(20, 0))
				}
				drained(b, env, "AGENTBUS_WORKFLOWS")
				behind := quietRun(b, env, tl, "behind")
				b.ReportMetric(ms(pct(alone, 50)), "alone-p50-ms")
				b.ReportMetric(ms(pct(alone, 95)), "alone-p95-ms")
				b.ReportMetric(ms(pct(behind, 50)), "behind-p50-ms")
				b.ReportMetric(ms(pct(behind, 95)), "behind-p95-ms")
				b.ReportMetric(float64(pct(behind, 95))/float64(pct(alone, 95)), "p95-ratio")
				b.ReportMetric(float64(tl.count("noisy")), "noisy-done-meanwhile")
			}
		})
	}
}

// quietRun submits 50 quiet workflows at 20 a second and returns their
// end-to-end times, submission to complete event.
func quietRun(b *testing.B, env *bustest.Env, tl *tally, tag string) []time.Duration {
	const n = 50
	sent := make([]time.Time, n)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := range n {
		sent[i] = time.Now()
		submit(b, env.Bus, "quiet", fmt.Sprintf("%s%d", tag, i), sleeper(20, 0))
		<-tick.C
	}
	done := tl.count("quiet")
	deadline := time.Now().Add(10 * time.Minute)
	out := make([]time.Duration, n)
	for i := range n {
		key := fmt.Sprintf("quiet/%s%d", tag, i)
		for {
			tl.mu.Lock()
			at, ok := tl.at[key]
			tl.mu.Unlock()
			if ok {
				out[i] = at.Sub(sent[i])
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s did not complete (%d quiet done)", key, done)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return out
}

// pct is the p-th percentile of ds.
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// envInt reads a positive integer from the environment, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
