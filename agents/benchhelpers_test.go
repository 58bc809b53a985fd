package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// benchNoopCapability is served by benchNoop.
const benchNoopCapability = "noop"

// benchNoop returns its step's input unchanged: all that is left of a step
// is the runtime's own cost.
type benchNoop struct{}

var _ agents.Agent = benchNoop{}

func (benchNoop) Card() agents.Card {
	return agents.Card{Name: "noop", Version: "1.0.0", Capabilities: []string{benchNoopCapability},
		Description: "Returns its input; measures the runtime's dispatch cost."}
}

func (benchNoop) Handle(_ context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
	return req.Input, nil
}

// benchReply is one step answer as the benchmark's reply tap received it.
type benchReply struct {
	workflow, step string
	typ            events.Type
	// handlerMS is the worker's own measure of the step (StepCompleted's
	// duration_ms: the handler, its progress event and bookkeeping).
	handlerMS float64
}

// tapBenchReplies consumes every reply of one tenant from AGENTBUS_REPLIES and
// hands it over on the returned channel. The replies stream is a work queue,
// so the filter (this tenant only) must be the only consumer on it: each
// benchmark uses a tenant of its own. The tap reads headers and the duration
// only (no schema validation), so it adds little to what is measured.
func tapBenchReplies(b *testing.B, bs *bus.Bus, tenant string) <-chan benchReply {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// subjects has no per-tenant reply filter: take any reply subject of
	// the tenant and wildcard its workflow token.
	subj, err := subjects.Reply(tenant, "x")
	if err != nil {
		b.Fatal(err)
	}
	filter := strings.TrimSuffix(subj, ".x") + ".*"
	cons, err := bs.JetStream().CreateOrUpdateConsumer(ctx, subjects.StreamReplies, jetstream.ConsumerConfig{
		Durable: "bench-replies-" + tenant, FilterSubject: filter,
		AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 8192,
	})
	if err != nil {
		b.Fatalf("reply consumer: %v", err)
	}
	ch := make(chan benchReply, 8192)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		h := m.Headers()
		_ = m.Ack()
		var done struct {
			DurationMS float64 `json:"duration_ms"`
		}
		_ = json.Unmarshal(m.Data(), &done)
		ch <- benchReply{workflow: h.Get(events.HeaderWorkflow), step: h.Get(events.HeaderStep),
			typ: events.Type(h.Get(events.HeaderType)), handlerMS: done.DurationMS}
	}, jetstream.PullMaxMessages(512))
	if err != nil {
		b.Fatalf("reply consume: %v", err)
	}
	b.Cleanup(cc.Stop)
	return ch
}

// awaitBenchReplies receives n completed replies of workflow wf, failing the
// benchmark on a step.failed, a foreign reply, or the deadline. It returns
// the sum of the replies' handler durations in ms.
func awaitBenchReplies(b *testing.B, ch <-chan benchReply, wf string, n int, within time.Duration) (handlerMS float64) {
	b.Helper()
	t := time.NewTimer(within)
	defer t.Stop()
	for got := 0; got < n; got++ {
		select {
		case r := <-ch:
			if r.workflow != wf || r.typ != events.TypeStepCompleted {
				b.Fatalf("reply %s for %s step %s, want %s for %s", r.typ, r.workflow, r.step, events.TypeStepCompleted, wf)
			}
			handlerMS += r.handlerMS
		case <-t.C:
			b.Fatalf("%d of %d replies for %s within %s", got, n, wf, within)
		}
	}
	return handlerMS
}

// benchWorkflowSeq makes every batch's fake workflow id unique within the
// process, so that no step request is dropped as a duplicate Nats-Msg-Id.
var benchWorkflowSeq atomic.Int64

func benchWorkflow(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, benchWorkflowSeq.Add(1))
}

// benchStepRequest builds the step.requested event the orchestrator would send
// for attempt 1 of a step, with its subject and dedup key.
func benchStepRequest(b *testing.B, tenant, wf, step, capability string, input json.RawMessage) (string, events.Envelope, string) {
	subj, err := subjects.Step(tenant, capability)
	if err != nil {
		b.Fatal(err)
	}
	key := events.StepKey(tenant, wf, step, 1)
	env, err := events.New(events.TypeStepRequested, key, events.SourceOrchestrator, tenant, wf, step,
		events.StepRequested{StepID: step, Capability: capability, Attempt: 1, Input: input})
	if err != nil {
		b.Fatal(err)
	}
	return subj, env, key
}

// startBenchWorkers runs n workers of agent, each on its own connection to env's
// server, and returns once all n pull from the capability's shared consumer.
// They stop, and their connections close, when b ends.
func startBenchWorkers(b *testing.B, env *bustest.Env, agent agents.Agent, n, concurrency int, name string) {
	b.Helper()
	conns := make([]*bus.Bus, n)
	for i := range conns {
		conns[i] = bustest.Connect(b, env)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// Registered after the connections, so it runs before they close.
	b.Cleanup(func() { cancel(); wg.Wait() })
	for i, c := range conns {
		w, err := agents.NewWorker(agents.WorkerConfig{
			Bus: c, Agents: []agents.Agent{agent}, Name: fmt.Sprintf("%s-%d", name, i),
			Concurrency: concurrency, Logger: bustest.Logger(b),
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx) }()
	}
	durable, err := subjects.StepConsumer(agent.Card().Capabilities[0])
	if err != nil {
		b.Fatal(err)
	}
	waitBenchPulling(b, env.Bus, durable, n)
}

// waitBenchPulling waits until a step consumer has at least n pull requests
// waiting: every worker is ready to take a step.
func waitBenchPulling(b *testing.B, bs *bus.Bus, durable string, n int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := bs.JetStream().Consumer(ctx, subjects.StreamSteps, durable)
	if err != nil {
		b.Fatalf("step consumer %s: %v", durable, err)
	}
	for {
		info, err := cons.Info(ctx)
		if err == nil && info.NumWaiting >= n {
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("consumer %s: fewer than %d workers pulling within 10s (last error %v)", durable, n, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// warmUp runs n steps through the workers before timing starts, so that
// connections, consumers and stream blocks are past their first use.
func warmUp(b *testing.B, env *bustest.Env, replies <-chan benchReply, tenant, capability string, input json.RawMessage, n int) {
	b.Helper()
	ctx := context.Background()
	wf := benchWorkflow("warmup")
	for i := range n {
		subj, ev, key := benchStepRequest(b, tenant, wf, "w"+strconv.Itoa(i), capability, input)
		if _, err := env.Bus.Publish(ctx, subj, ev, key); err != nil {
			b.Fatal(err)
		}
	}
	awaitBenchReplies(b, replies, wf, n, 30*time.Second)
}

// reportBenchLatency reports the median and 99th percentile of d in µs and
// returns the median.
func reportBenchLatency(b *testing.B, d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	at := func(q float64) float64 { return float64(d[min(int(q*float64(len(d))), len(d)-1)]) / 1e3 }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	return at(0.50)
}
