package orchestrator_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/events"
)

// BenchmarkWorkflow runs whole workflows one after another — submit, plan,
// dispatch each step to the echo agent, collect its reply, checkpoint, emit
// events, complete — and reports per-step latency percentiles. Run it beside
// BenchmarkRawRequestReply, its baseline on the same kind of server.
func BenchmarkWorkflow(b *testing.B) {
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("chain-%d", n), func(b *testing.B) {
			s := startStack(b)
			steps := make([]events.PlanStep, n)
			for i := range steps {
				steps[i] = events.PlanStep{ID: fmt.Sprintf("s%d", i), Capability: "echo", Input: json.RawMessage(`"x"`)}
				if i > 0 {
					steps[i].DependsOn = []string{steps[i-1].ID}
				}
			}
			p := &events.Plan{Steps: steps}
			var perStep []time.Duration
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				wf := fmt.Sprintf("bench-%d", i)
				start := time.Now()
				submit(b, s.env.Bus, "default", wf, events.WorkflowSubmitted{Plan: p})
				if end := last(b, collect(b, s.env.Bus, "default", wf)); end.Type != events.TypeComplete {
					b.Fatalf("workflow ended %s", end.Type)
				}
				perStep = append(perStep, time.Since(start)/time.Duration(n))
			}
			reportPercentiles(b, perStep, "step")
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

// BenchmarkRawRequestReply is the baseline: a raw nats.go request to a
// queue-group responder on an embedded server started the same way.
func BenchmarkRawRequestReply(b *testing.B) {
	s := startStack(b)
	nc, err := nats.Connect(s.env.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.QueueSubscribe("bench.echo", "workers", func(m *nats.Msg) { _ = m.Respond(m.Data) })
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	var lat []time.Duration
	payload := []byte(`{"input":"x"}`)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := nc.Request("bench.echo", payload, 5*time.Second); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportPercentiles(b, lat, "req")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

func reportPercentiles(b *testing.B, d []time.Duration, unit string) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	at := func(q float64) float64 { return float64(d[min(int(q*float64(len(d))), len(d)-1)].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-µs/"+unit)
	b.ReportMetric(at(0.99), "p99-µs/"+unit)
}
