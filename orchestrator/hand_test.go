package orchestrator_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/subjects"
	engine "github.com/agentbus/agentbus/workflow"
)

// TestHandedAnswersSkipTheRepliesStream: with an orchestrator to take
// them, a worker's answers never reach the replies stream, and the
// workflow runs each step once; with HandWait negative every answer goes
// through the stream, as before.
func TestHandedAnswersSkipTheRepliesStream(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		wait   time.Duration
		stored uint64
		way    string
	}{{"handed", 0, 0, agents.AnswerHanded}, {"through the stream", -1, 3, agents.AnswerStreamed}} {
		t.Run(c.name, func(t *testing.T) {
			env := bustest.New(t)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			t.Cleanup(func() { cancel(); <-done })
			reg := prometheus.NewRegistry()
			metrics, err := agents.NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			w, err := agents.NewWorker(agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{echo.Agent{}},
				HandWait: c.wait, Logger: bustest.Logger(t), Metrics: metrics})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			go func() { defer close(done); _ = w.Run(ctx) }()
			o, _ := startOrchestrator(t, env, orchestrator.Config{})
			wf := "chain"
			submit(t, env.Bus, "default", wf, events.WorkflowSubmitted{Plan: chainPlan(3)})
			completedOnce(t, o, wf, collect(t, env.Bus, "default", wf), nil)
			if n := lastSeq(t, env, subjects.StreamReplies); n != c.stored {
				t.Errorf("the replies stream stored %d answers, want %d", n, c.stored)
			}
			// The worker counts an answer once its verdict is back, which may
			// be after the workflow's end is stored.
			var got map[string]float64
			answers := func() bool {
				got = map[string]float64{}
				families, _ := reg.Gather()
				for _, f := range families {
					if f.GetName() != "agentbus_worker_answers_total" {
						continue
					}
					for _, m := range f.GetMetric() {
						for _, l := range m.GetLabel() {
							if l.GetName() == "way" {
								got[l.GetValue()] = m.GetCounter().GetValue()
							}
						}
					}
				}
				return got[agents.AnswerHanded]+got[agents.AnswerStreamed] >= 3
			}
			eventually(t, 10*time.Second, "three answers counted", answers)
			if len(got) != 2 || got[c.way] != 3 || got[agents.AnswerHanded]+got[agents.AnswerStreamed] != 3 {
				t.Errorf("agentbus_worker_answers_total by way: %v, want 3 %s", got, c.way)
			}
		})
	}
}

// TestAnswerHandedAndStreamedIsRecordedOnce: a worker that stops waiting
// for the verdict on an answer it handed sends it through the replies
// stream as well, and the orchestrator may have recorded the handed one
// meanwhile (or a worker hands an answer already streamed): either way the
// step is recorded once, the workflow moves on once, and the stream's copy
// is consumed.
func TestAnswerHandedAndStreamedIsRecordedOnce(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	served(t, env, "echo")
	o, _ := startOrchestrator(t, env, orchestrator.Config{})
	const wf = "twice"
	submit(t, env.Bus, "default", wf, events.WorkflowSubmitted{Plan: plan(step("A", "echo"), step("B", "echo", "A"))})
	results, _ := subjects.Result("default", wf)
	replies, _ := subjects.Reply("default", wf)
	hand := func(e events.Envelope) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := env.Bus.Hand(ctx, results, e); err != nil {
			t.Fatalf("hand %s: %v", e.ID, err)
		}
	}
	stream := func(e events.Envelope) {
		t.Helper()
		if _, err := env.Bus.Publish(context.Background(), replies, e, e.ID); err != nil {
			t.Fatal(err)
		}
		waitFor(t, e.ID+" consumed", func() bool { return lookup(t, env, subjects.StreamReplies, replies, e.ID) == nil })
	}
	answer := func(id string) events.Envelope {
		checkpointWhen(t, o, wf, id+" dispatched", func(cp *engine.Checkpoint) bool {
			return cp.Tasks[id].Status == events.StateWorking && len(cp.Outbox) == 0
		})
		out, _ := json.Marshal(id + " done")
		key := events.StepKey("default", wf, id, 1)
		e, err := events.New(events.TypeStepCompleted, key, events.SourceAgentPrefix+"echo", "default", wf, id,
			events.StepCompleted{StepID: id, Capability: "echo", Attempt: 1, Output: out, Worker: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a := answer("A")
	hand(a)
	stream(a)
	b := answer("B")
	stream(b)
	hand(b)

	rs := collect(t, env.Bus, "default", wf)
	completedOnce(t, o, wf, rs, nil)
	for _, id := range []string{"A", "B"} {
		completed := 0
		for _, st := range statuses(rs, id) {
			if st.State == events.StateCompleted {
				completed++
			}
		}
		if completed != 1 {
			t.Errorf("step %s: %d completed statuses, want 1:%s", id, completed, describe(rs))
		}
	}
}

// TestHandedAnswerWhoseOutboxFailedIsPublished: the orchestrator records a
// handed answer and then cannot publish the transition's outbox (here the
// events stream refuses every new message). It must not tell the worker
// the answer is taken: the worker then sends it through the replies
// stream, whose deliveries publish the stored outbox once the stream takes
// messages again — not the checkpoint scan, a step lease (90 s) later, as
// when the worker was told +OK as soon as the checkpoint was stored.
func TestHandedAnswerWhoseOutboxFailedIsPublished(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	gate := newFn("gate", func(ctx context.Context, _ agents.Request) (json.RawMessage, error) {
		select {
		case <-release:
			return json.RawMessage(`{"ok":true}`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	s := startWith(t, bustest.New(t), orchestrator.Config{AckWait: time.Second}, gate)
	js := s.env.Bus.JetStream()
	submit(t, s.env.Bus, "default", "wf", events.WorkflowSubmitted{Plan: plan(step("g", "gate"))})
	eventually(t, 10*time.Second, "the step runs", func() bool { return gate.calls.Load() == 1 })
	// The events stream takes no new message: what the answer's
	// transition publishes is refused.
	str, err := js.Stream(t.Context(), subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	cfg := str.CachedInfo().Config
	full := cfg
	full.MaxMsgs, full.Discard = int64(str.CachedInfo().State.Msgs), jetstream.DiscardNew
	if _, err := js.UpdateStream(t.Context(), full); err != nil {
		t.Fatal(err)
	}
	close(release)
	eventually(t, 10*time.Second, "the answer recorded", func() bool {
		cp, err := s.orch.Checkpoint(t.Context(), "default", "wf")
		return err == nil && cp.Status == events.StateCompleted && len(cp.Outbox) > 0
	})
	// The transition's publish is refused, and tried again until the
	// handler's time (AckWait) is up: past that the worker has its -ERR
	// and has sent the answer through the replies stream.
	time.Sleep(2 * time.Second)
	if cp, err := s.orch.Checkpoint(t.Context(), "default", "wf"); err != nil || len(cp.Outbox) == 0 {
		t.Fatalf("the outbox went out while the stream refused it: %v", err)
	}
	if _, err := js.UpdateStream(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rs := collect(t, s.env.Bus, "default", "wf")
	completedOnce(t, s.orch, "wf", rs, nil)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the stored outbox came out %s after the stream took messages again, want within 5s", took)
	}
	if n := gate.calls.Load(); n != 1 {
		t.Errorf("the step ran %d times, want once", n)
	}
}
