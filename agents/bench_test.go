package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/bus/bustest"
)

// scaleOutBase collects the single-worker steps/s of the current
// BenchmarkScaleOut run, the denominator of its efficiency. -count repeats
// each sub-benchmark back to back, so every workers-1 run precedes every
// workers-N run and the mean of them all is the base.
var scaleOutBase struct {
	sum float64
	n   int
}

// BenchmarkScaleOut runs the sleep agent (20 ms per step) on 1, 2, 4 and 8
// workers, each on its own connection with Concurrency 1, sharing the
// capability's consumer on one embedded server. Each iteration publishes a
// batch of 100·N step requests straight to the step subject (no
// orchestrator) and waits for all their replies, so that every worker is
// busy for about two seconds. It reports steps/s, the mean handler time the
// workers measured, the rest of each step's wall time per worker
// ("overhead-ms"), and, for N > 1, efficiency
// = steps/s ÷ (N × the mean workers-1 steps/s of the same run; no ratio if
// workers-1 was filtered out); the goal is efficiency ≥ 0.85 at N = 8.
func BenchmarkScaleOut(b *testing.B) {
	const (
		tenant    = "bench-scale"
		stepMS    = 20
		perWorker = 100
	)
	env := bustest.New(b)
	replies := tapBenchReplies(b, env.Bus, tenant)
	input := json.RawMessage(fmt.Sprintf(`{"ms":%d}`, stepMS))
	scaleOutBase.sum, scaleOutBase.n = 0, 0
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("workers-%d", n), func(b *testing.B) {
			startBenchWorkers(b, env, sleep.Agent{}, n, 1, fmt.Sprintf("scale%d", n))
			ctx := context.Background()
			batch := perWorker * n
			within := 30*time.Second + time.Duration(perWorker*stepMS*4)*time.Millisecond
			warmUp(b, env, replies, tenant, sleep.Capability, input, n)
			var handlerMS float64
			for b.Loop() {
				wf := benchWorkflow("scale")
				for i := range batch {
					subj, ev, key := benchStepRequest(b, tenant, wf, "s"+strconv.Itoa(i), sleep.Capability, input)
					if _, err := env.Bus.Publish(ctx, subj, ev, key); err != nil {
						b.Fatal(err)
					}
				}
				handlerMS += awaitBenchReplies(b, replies, wf, batch, within)
			}
			steps := float64(batch * b.N)
			rate := steps / b.Elapsed().Seconds()
			b.ReportMetric(rate, "steps/s")
			// A worker's wall time per step beyond what its handler took:
			// fetching, decoding, replying, acking and the batch's tail.
			b.ReportMetric(handlerMS/steps, "handler-ms")
			b.ReportMetric(float64(n)*1e3/rate-handlerMS/steps, "overhead-ms")
			switch {
			case n == 1:
				scaleOutBase.sum += rate
				scaleOutBase.n++
			case scaleOutBase.n > 0:
				base := scaleOutBase.sum / float64(scaleOutBase.n)
				b.ReportMetric(rate/(float64(n)*base), "efficiency")
			}
		})
	}
}

// BenchmarkDispatch measures one step's round trip through the runtime —
// publish the step request, a worker pulls it, runs a no-op agent and
// publishes the reply, the reply is received — one step at a time, beside
// raw nats.go request/reply to a queue-group responder with the same
// payload on the same embedded server. The agentbus sub-benchmark reports
// its p50 as a multiple of the raw p50 ("x-raw-p50").
func BenchmarkDispatch(b *testing.B) {
	const tenant = "bench-dispatch"
	env := bustest.New(b)
	input := json.RawMessage(`{"query":"ping"}`)
	_, sample, _ := benchStepRequest(b, tenant, "w", "s0", benchNoopCapability, input)
	payload := []byte(sample.Data)
	var rawP50 float64

	b.Run("raw-nats-request-reply", func(b *testing.B) {
		responder, requester := benchNATSConnect(b, env.URL), benchNATSConnect(b, env.URL)
		sub, err := responder.QueueSubscribe("bench.dispatch.noop", "workers", func(m *nats.Msg) { _ = m.Respond(m.Data) })
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = sub.Unsubscribe() }()
		if err := responder.Flush(); err != nil {
			b.Fatal(err)
		}
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			if _, err := requester.Request("bench.dispatch.noop", payload, 5*time.Second); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		rawP50 = reportBenchLatency(b, lat)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		b.ReportMetric(float64(len(payload)), "payload-B")
	})

	b.Run("agentbus", func(b *testing.B) {
		replies := tapBenchReplies(b, env.Bus, tenant)
		startBenchWorkers(b, env, benchNoop{}, 1, 0, "dispatch")
		warmUp(b, env, replies, tenant, benchNoopCapability, input, 10)
		ctx := context.Background()
		wf := benchWorkflow("dispatch")
		var lat []time.Duration
		for i := 0; b.Loop(); i++ {
			subj, ev, key := benchStepRequest(b, tenant, wf, "s"+strconv.Itoa(i), benchNoopCapability, input)
			start := time.Now()
			if _, err := env.Bus.Publish(ctx, subj, ev, key); err != nil {
				b.Fatal(err)
			}
			awaitBenchReplies(b, replies, wf, 1, 10*time.Second)
			lat = append(lat, time.Since(start))
		}
		p50 := reportBenchLatency(b, lat)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		b.ReportMetric(float64(len(payload)), "payload-B")
		if rawP50 > 0 {
			b.ReportMetric(p50/rawP50, "x-raw-p50")
		}
	})
}

// benchNATSConnect opens a plain nats.go connection, closed when b ends.
func benchNATSConnect(b *testing.B, url string) *nats.Conn {
	b.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	return nc
}
