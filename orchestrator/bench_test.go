package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/subjects"
)

// BenchmarkWorkflow runs whole workflows one after another — submit, plan,
// dispatch each step to the echo agent, collect its reply, checkpoint, emit
// events, complete — and reports per-step latency percentiles. Run it beside
// BenchmarkRawRequestReply, its baseline on the same kind of server.
func BenchmarkWorkflow(b *testing.B) {
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("chain-%d", n), func(b *testing.B) { benchChains(b, startStack(b), n) })
	}
}

// chainPlan is a chain of n echo steps.
func chainPlan(n int) *events.Plan {
	steps := make([]events.PlanStep, n)
	for i := range steps {
		steps[i] = events.PlanStep{ID: fmt.Sprintf("s%d", i), Capability: "echo", Input: json.RawMessage(`"x"`)}
		if i > 0 {
			steps[i].DependsOn = []string{steps[i-1].ID}
		}
	}
	return &events.Plan{Steps: steps}
}

// benchChains runs n-step chains one after another on s and reports the
// per-step latency percentiles and steps/s.
func benchChains(b *testing.B, s *stack, n int) {
	p := chainPlan(n)
	tag := runTag()
	var perStep []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		wf := fmt.Sprintf("bench-%s-%d-%d", tag, n, i)
		start := time.Now()
		submit(b, s.env.Bus, "default", wf, events.WorkflowSubmitted{Plan: p})
		if end := last(b, collect(b, s.env.Bus, "default", wf)); end.Type != events.TypeComplete {
			b.Fatalf("workflow ended %s", end.Type)
		}
		perStep = append(perStep, time.Since(start)/time.Duration(n))
	}
	reportPercentiles(b, perStep, "step")
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "steps/s")
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

// BenchmarkRawJetStreamPublish is the CPU-bound baseline: a raw nats.go
// client storing messages of an event's size in AGENTBUS_EVENTS, on an
// embedded server started the same way, 256 acknowledgements awaited at
// a time (what a busy orchestrator's outbox publishes look like). A step
// stores about three messages (a checkpoint revision, two events; -bench
// StepCost), so msgs/s ÷ 3 bounds steps/s for this machine with nothing
// else done a step; BenchmarkWorkflowsParallel's steps/s over it says how
// much of that bound the rest of a step leaves.
func BenchmarkRawJetStreamPublish(b *testing.B) {
	s := startStack(b)
	nc, err := nats.Connect(s.env.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	subj, err := subjects.Events("default", "raw-baseline")
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 300)
	for i := range payload {
		payload[i] = 'x'
	}
	const window = 256
	var pending []jetstream.PubAckFuture
	wait := func() {
		for _, f := range pending {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			}
		}
		pending = pending[:0]
	}
	b.ResetTimer()
	for b.Loop() {
		f, err := js.PublishAsync(subj, payload)
		if err != nil {
			b.Fatal(err)
		}
		if pending = append(pending, f); len(pending) == window {
			wait()
		}
	}
	wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
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

// BenchmarkWorkflowsParallel runs 10-step chains of the no-op echo agent,
// 16 workflows at a time, and reports total steps/s: the orchestrator's
// throughput when it has more than one workflow to work on.
func BenchmarkWorkflowsParallel(b *testing.B) { benchParallel(b, startStack(b), 16) }

// BenchmarkWorkflowsParallel64 is BenchmarkWorkflowsParallel with 64
// workflows at a time.
func BenchmarkWorkflowsParallel64(b *testing.B) { benchParallel(b, startStack(b), 64) }

// BenchmarkWorkflowsUnparked is BenchmarkWorkflowsParallel and
// BenchmarkWorkflowsParallel64 with a flow-control window (FlowWindow) of
// 8 requests per worker slot instead of 1, so that no step waits for
// admission: with the default window (one echo worker, 32 slots) 64
// chains in flight park some of their steps. This is what parking costs.
func BenchmarkWorkflowsUnparked(b *testing.B) {
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("inflight-%d", n), func(b *testing.B) {
			benchParallel(b, startWith(b, bustest.New(b), orchestrator.Config{FlowWindow: 8}), n)
		})
	}
}

// benchParallel runs 10-step chains on s, parallel workflows at a time,
// and reports steps/s and workflows/s.
func benchParallel(b *testing.B, s *stack, parallel int) {
	p := chainPlan(10)
	tag := runTag()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		runBatch(b, s, p, fmt.Sprintf("par-%s-%d", tag, n), parallel)
		n++
	}
	b.ReportMetric(float64(10*parallel*b.N)/b.Elapsed().Seconds(), "steps/s")
	b.ReportMetric(float64(parallel*b.N)/b.Elapsed().Seconds(), "workflows/s")
}

// runTag names one run of a benchmark's body in its workflows' ids. Where
// sub-benchmarks share a stack (BenchmarkReplicas, BenchmarkReplicaRatio),
// -count repeats each of them on that same stack, and one that used the
// ids of a run before it resubmitted finished workflows, which agentbus
// takes as duplicates and answers from their stored ends at once: the
// second of -count 2 reported 19,661 steps/s for 3,335.
func runTag() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }

// runBatch runs parallel workflows of plan p on s at once, named
// prefix-<j>, and returns once each has ended complete.
func runBatch(b *testing.B, s *stack, p *events.Plan, prefix string, parallel int) {
	var wg sync.WaitGroup
	for j := range parallel {
		wf := fmt.Sprintf("%s-%d", prefix, j)
		wg.Go(func() {
			submit(b, s.env.Bus, "default", wf, events.WorkflowSubmitted{Plan: p})
			if end := last(b, collect(b, s.env.Bus, "default", wf)); end.Type != events.TypeComplete {
				b.Errorf("workflow ended %s", end.Type)
			}
		})
	}
	wg.Wait()
}

// BenchmarkCancel measures cancellation latency: from sending the cancel
// request to every in-flight step's context being cancelled, with 8
// blocking steps in flight.
func BenchmarkCancel(b *testing.B) {
	var mu sync.Mutex
	var started int
	var stopped []time.Time
	block := newFn("block", func(ctx context.Context, _ agents.Request) (json.RawMessage, error) {
		mu.Lock()
		started++
		mu.Unlock()
		<-ctx.Done()
		mu.Lock()
		stopped = append(stopped, time.Now())
		mu.Unlock()
		return nil, ctx.Err()
	})
	s := startStack(b, block)
	var steps []events.PlanStep
	for i := range 8 {
		steps = append(steps, step(fmt.Sprintf("b%d", i), "block"))
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		mu.Lock()
		started, stopped = 0, nil
		mu.Unlock()
		wf := fmt.Sprintf("cancel-%d", i)
		submit(b, s.env.Bus, "default", wf, events.WorkflowSubmitted{Plan: plan(steps...)})
		for deadline := time.Now().Add(20 * time.Second); ; {
			mu.Lock()
			n := started
			mu.Unlock()
			if n == 8 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("only %d steps started", n)
			}
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		sent := time.Now()
		if res := controlB(b, s.env.Bus, "default", wf, events.Control{Action: events.ActionCancel}); !res.Applied {
			b.Fatalf("cancel: %+v", res)
		}
		for deadline := time.Now().Add(20 * time.Second); ; {
			mu.Lock()
			n := len(stopped)
			var lastStop time.Time
			if n == 8 {
				lastStop = stopped[7]
			}
			mu.Unlock()
			if n == 8 {
				lat = append(lat, lastStop.Sub(sent))
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("only %d steps saw the cancel", n)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	reportPercentiles(b, lat, "cancel")
}

// controlB is control for benchmarks.
func controlB(b *testing.B, bb *bus.Bus, tenant, workflow string, c events.Control) events.ControlResult {
	b.Helper()
	subj, _ := subjects.Control(tenant, workflow)
	env, err := events.New(events.TypeControl, fmt.Sprintf("ctl-%d", time.Now().UnixNano()), "/bench", tenant, workflow, "", c)
	if err != nil {
		b.Fatal(err)
	}
	out, err := bb.Request(context.Background(), subj, env)
	if err != nil {
		b.Fatal(err)
	}
	var res events.ControlResult
	_ = json.Unmarshal(out, &res)
	return res
}
