package orchestrator_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/subjects"
	engine "github.com/agentbus/agentbus/workflow"
)

// The tests in this file put a consumer in the state seen on a cluster
// after a node's SIGKILL: a message delivered and never acknowledged nor
// redelivered (ack pending 1, redelivered 0) while it stays stored. Here a
// pull that takes the message and sits on it, on a consumer whose AckWait
// is an hour, holds it the same way; the orchestrator cannot tell the two
// apart, and must recover from both.

// holdOne pulls one message from a durable consumer (made with an
// AckWait of an hour if it does not exist) and never acks it.
func holdOne(t *testing.T, env *bustest.Env, stream, durable, filter string) <-chan jetstream.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	if err := env.Bus.EnsureConsumer(ctx, bus.ConsumeConfig{Stream: stream, Durable: durable, Filter: filter,
		AckWait: time.Hour, MaxDeliver: -1}); err != nil {
		t.Fatal(err)
	}
	c, err := env.Bus.JetStream().Consumer(ctx, stream, durable)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan jetstream.Msg, 1)
	go func() {
		m, err := c.Next(jetstream.FetchContext(ctx))
		if err == nil {
			got <- m
		}
	}()
	return got
}

// countingEcho is an echo capability that counts its runs by attempt.
type countingEcho struct{ runs [8]atomic.Int32 }

func (a *countingEcho) Card() agents.Card {
	return agents.Card{Name: "counting-echo", Version: "0.1.0", Capabilities: []string{"echo"}, Description: "Echo that counts."}
}

func (a *countingEcho) Handle(_ context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
	a.runs[min(req.Attempt, 7)].Add(1)
	return json.RawMessage(`{"attempt":` + string(rune('0'+min(req.Attempt, 7))) + `}`), nil
}

func recoveries(rs []bus.Record) []string {
	var out []string
	for _, r := range rs {
		var st events.Status
		if r.Envelope.Type == events.TypeStatus && json.Unmarshal(r.Envelope.Data, &st) == nil && st.Recovery != "" {
			out = append(out, st.Recovery)
		}
	}
	return out
}

// A step request that its consumer holds without redelivering is
// recovered in two stages: the consumer's leader is stepped down (on this
// single server there is none, which the event says), then, still held
// StepHold later, the request is deleted and the step dispatched again as
// attempt 2. A reply of attempt 1 that comes after that is fenced off:
// the step completes once, with attempt 2's output, and its agent ran
// once.
func TestHeldStepRequestIsRecovered(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	durable, _ := subjects.StepConsumer("echo")
	filter, _ := subjects.StepFilter("echo")
	held := holdOne(t, env, subjects.StreamSteps, durable, filter)
	reg := prometheus.NewRegistry()
	m, err := orchestrator.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := startOrchestrator(t, env, orchestrator.Config{StepLease: testLease, ScanInterval: time.Hour, StepHold: 2 * time.Second, Metrics: m})
	submit(t, env.Bus, "default", "held", events.WorkflowSubmitted{Plan: plan(step("a", "echo"))})
	var first jetstream.Msg
	select {
	case first = <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the request never reached the holding pull")
	}
	md, _ := first.Metadata()
	cp := checkpointWhen(t, o, "held", "step a dispatched again", func(cp *engine.Checkpoint) bool {
		return cp.Tasks["a"] != nil && cp.Tasks["a"].Attempt == 2
	})
	if ta := cp.Tasks["a"]; ta.Since != 2 || ta.HeldSince != nil || ta.SteppedDownAt != nil {
		t.Fatalf("attempt 2: since %d held %v stepped down %v, want since 2 and both cleared", ta.Since, ta.HeldSince, ta.SteppedDownAt)
	}
	if _, err := env.Bus.StoredMsgID(context.Background(), subjects.StreamSteps, md.Sequence.Stream); err == nil {
		t.Fatal("attempt 1's request is still stored: it could be delivered again")
	}
	// Attempt 1 answers after all: fenced off.
	replyAs(t, env, "held", events.StepCompleted{StepID: "a", Capability: "echo", Attempt: 1, Output: json.RawMessage(`{"stale":true}`), Worker: "ghost"})
	waitFor(t, "the stale reply consumed", func() bool { return streamCount(t, env, subjects.StreamReplies) == 0 })
	if cp, _ := o.Checkpoint(context.Background(), "default", "held"); cp.Tasks["a"].Status != events.StateWorking {
		t.Fatalf("attempt 1's late reply moved the step to %s", cp.Tasks["a"].Status)
	}
	agent := &countingEcho{}
	startWorker(t, env, agent)

	rs := collect(t, env.Bus, "default", "held")
	if e := last(t, rs); e.Type != events.TypeComplete {
		t.Fatalf("ended %s: %s", e.Type, describe(rs))
	}
	cp, _ = o.Checkpoint(context.Background(), "default", "held")
	if got := string(cp.Tasks["a"].Output); got != `{"attempt":2}` {
		t.Errorf("step a output %s, want attempt 2's", got)
	}
	if n1, n2 := agent.runs[1].Load(), agent.runs[2].Load(); n1 != 0 || n2 != 1 {
		t.Errorf("runs: attempt 1 %d, attempt 2 %d; want 0 and 1", n1, n2)
	}
	if got := recoveries(rs); len(got) != 2 || got[0] != events.RecoveryStepDown || got[1] != events.RecoveryRedispatch {
		t.Errorf("recovery events %v, want [stepdown redispatch]", got)
	}
	for _, kind := range []string{events.RecoveryStepDown, events.RecoveryRedispatch} {
		if n := recoveredCount(t, reg, kind); n != 1 {
			t.Errorf("recoveries_total{kind=%q} = %v, want 1", kind, n)
		}
	}
}

// A submission stored in AGENTBUS_WORKFLOWS that the submissions consumer
// holds without redelivering has no checkpoint past SubmitBound: the
// reconciler starts it from the stream, says so in its events, and
// deletes the stored message; the workflow completes once.
func TestHeldSubmissionIsStartedFromTheStream(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	held := holdOne(t, env, subjects.StreamWorkflows, subjects.ConsumerSubmissions, subjects.AllSubmissions)
	submit(t, env.Bus, "default", "stranded", events.WorkflowSubmitted{Plan: plan(step("a", "echo"))})
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the submission never reached the holding pull")
	}
	startEcho(t, env)
	reg := prometheus.NewRegistry()
	m, err := orchestrator.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	// AckWait an hour: the orchestrator's own consumer keeps holding it.
	startOrchestrator(t, env, orchestrator.Config{AckWait: time.Hour, SubmitBound: time.Second, ScanInterval: 200 * time.Millisecond, Metrics: m})
	rs := collect(t, env.Bus, "default", "stranded")
	if e := last(t, rs); e.Type != events.TypeComplete {
		t.Fatalf("ended %s: %s", e.Type, describe(rs))
	}
	if got := recoveries(rs); len(got) != 1 || got[0] != events.RecoverySubmission {
		t.Errorf("recovery events %v, want [submission]", got)
	}
	waitFor(t, "the stored submission deleted", func() bool { return streamCount(t, env, subjects.StreamWorkflows) == 0 })
	if n := recoveredCount(t, reg, events.RecoverySubmission); n != 1 {
		t.Errorf("recoveries_total{kind=submission} = %v, want 1", n)
	}
}

// replyAs publishes a step's reply as a worker would.
func replyAs(t *testing.T, env *bustest.Env, workflow string, r events.StepCompleted) {
	t.Helper()
	subj, _ := subjects.Reply("default", workflow)
	key := events.StepKey("default", workflow, r.StepID, r.Attempt)
	e, err := events.New(events.TypeStepCompleted, key, events.SourceAgentPrefix+r.Capability, "default", workflow, r.StepID, r)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := env.Bus.Publish(ctx, subj, e, key); err != nil {
		t.Fatal(err)
	}
}

// streamCount is how many messages a stream holds.
func streamCount(t *testing.T, env *bustest.Env, stream string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := env.Bus.JetStream().Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// startWorker runs a worker with a until the test ends.
func startWorker(t *testing.T, env *bustest.Env, a agents.Agent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{a}, Logger: bustest.Logger(t), AckWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// recoveredCount is agentbus_orchestrator_recoveries_total{kind} in reg.
func recoveredCount(t *testing.T, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "agentbus_orchestrator_recoveries_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
