package orchestrator_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/internal/telemetry"
)

// BenchmarkTracing measures what tracing costs a workflow: 10-step chains
// of the echo agent (benchChains' workload) on two stacks in one run, one
// with tracing off (no provider: no-op spans), one with every span sampled,
// batched and exported over OTLP/HTTP to a receiver in this process. The
// chains alternate between the two stacks, so that whatever else loads the
// machine weighs on both alike; it reports each side's per-step median
// and steps/s and the overhead of "on". Goal: at most 10 %.
//
//	go test -run '^$' -bench BenchmarkTracing -benchtime 300x -count 3 ./orchestrator/
func BenchmarkTracing(b *testing.B) {
	const n = 10
	var exported atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := io.Copy(io.Discard, r.Body)
		exported.Add(c)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer recv.Close()
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	b.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	tp, err := telemetry.New(context.Background(), telemetry.Config{Enabled: true, ServiceName: "agentbus-bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tp.Shutdown(context.Background()) }()
	stacks := map[string]*stack{
		"off": startTraced(b, nil, agents.WorkerConfig{}),
		"on":  startTraced(b, tp, agents.WorkerConfig{}),
	}
	p := chainPlan(n)
	perStep := map[string][]time.Duration{}
	total := map[string]time.Duration{}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for _, side := range []string{"off", "on"} {
			wf := fmt.Sprintf("trace-%s-%d", side, i)
			s, start := stacks[side], time.Now()
			submit(b, s.env.Bus, "default", wf, events.WorkflowSubmitted{Plan: p})
			if end := last(b, collect(b, s.env.Bus, "default", wf)); end.Type != events.TypeComplete {
				b.Fatalf("workflow ended %s", end.Type)
			}
			took := time.Since(start)
			perStep[side] = append(perStep[side], took/n)
			total[side] += took
		}
	}
	b.StopTimer()
	_ = tp.Shutdown(context.Background())
	median := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	off, on := median(perStep["off"]), median(perStep["on"])
	b.ReportMetric(float64(off.Microseconds()), "off-p50-µs/step")
	b.ReportMetric(float64(on.Microseconds()), "on-p50-µs/step")
	b.ReportMetric(float64(n*b.N)/total["off"].Seconds(), "off-steps/s")
	b.ReportMetric(float64(n*b.N)/total["on"].Seconds(), "on-steps/s")
	b.ReportMetric(100*(float64(on)/float64(off)-1), "p50-overhead-%")
	b.ReportMetric(100*(float64(total["on"])/float64(total["off"])-1), "time-overhead-%")
	b.ReportMetric(float64(exported.Load())/float64(b.N), "otlp-bytes/workflow")
}
