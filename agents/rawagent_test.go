package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
)

// rawStep is what the raw agent saw of one step: the ce- headers and the
// step's JSON data, decoded with encoding/json only.
type rawStep struct {
	Tenant, Workflow, Step string
	Data                   struct {
		StepID            string                     `json:"step_id"`
		Capability        string                     `json:"capability"`
		Attempt           int                        `json:"attempt"`
		Input             json.RawMessage            `json:"input"`
		DependencyOutputs map[string]json.RawMessage `json:"dependency_outputs"`
	}
}

// rawUpperAgent serves capability "upper" the way a program in any language
// would: with a NATS client, JetStream pull consumer calls and JSON, and no
// agentbus package. It binds (creating it if needed) the capability's shared
// durable consumer, closes ready once it exists, and answers every step with
// its input string upper-cased, until ctx ends.
func rawUpperAgent(ctx context.Context, url string, ready chan<- struct{}, seen func(rawStep)) error {
	nc, err := nats.Connect(url, nats.Name("raw-upper-agent"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	// Looked up first, made only if missing (README step 1): an update
	// would have to repeat MaxWaiting, which the server refuses to change.
	cons, err := js.Consumer(ctx, "AGENTBUS_STEPS", "step-upper")
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cons, err = js.CreateConsumer(ctx, "AGENTBUS_STEPS", jetstream.ConsumerConfig{
			Durable: "step-upper", FilterSubject: "agentbus.*.step.upper",
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxWaiting: 65536,
		})
	}
	if err != nil {
		return fmt.Errorf("bind step-upper: %w", err)
	}
	close(ready)
	for ctx.Err() == nil {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			continue
		}
		for msg := range batch.Messages() {
			if err := rawUpperStep(ctx, js, msg, seen); err != nil {
				_ = msg.Nak()
				return err
			}
		}
	}
	return nil
}

func rawUpperStep(ctx context.Context, js jetstream.JetStream, msg jetstream.Msg, seen func(rawStep)) error {
	var s rawStep
	h := msg.Headers()
	s.Tenant, s.Workflow, s.Step = h.Get("ce-tenantid"), h.Get("ce-workflowid"), h.Get("ce-stepid")
	if err := json.Unmarshal(msg.Data(), &s.Data); err != nil {
		return fmt.Errorf("step data: %w", err)
	}
	seen(s)
	if err := msg.InProgress(); err != nil {
		return err
	}
	var text string
	if err := json.Unmarshal(s.Data.Input, &text); err != nil {
		return fmt.Errorf("input is not a string: %s", s.Data.Input)
	}
	data, err := json.Marshal(map[string]any{
		"step_id": s.Data.StepID, "capability": s.Data.Capability, "attempt": s.Data.Attempt,
		"output": strings.ToUpper(text),
	})
	if err != nil {
		return err
	}
	key := fmt.Sprintf("%s/%s/%s/%d", s.Tenant, s.Workflow, s.Data.StepID, s.Data.Attempt)
	reply := nats.NewMsg("agentbus." + s.Tenant + ".reply." + s.Workflow)
	for k, v := range map[string]string{
		"ce-specversion": "1.0", "ce-id": key, "ce-source": "/raw/upper",
		"ce-type": "io.agentbus.step.completed.v1", "ce-time": time.Now().UTC().Format(time.RFC3339),
		"ce-tenantid": s.Tenant, "ce-workflowid": s.Workflow, "ce-stepid": s.Data.StepID,
		"Content-Type": "application/json", "Nats-Msg-Id": key,
	} {
		reply.Header.Set(k, v)
	}
	reply.Data = data
	if _, err := js.PublishMsg(ctx, reply); err != nil {
		return fmt.Errorf("reply: %w", err)
	}
	return msg.Ack()
}

// TestRawNATSAgentServesACapability runs a workflow A(echo) → B(upper) where
// upper is served only by rawUpperAgent: the orchestrator accepts the
// capability because its shared consumer exists, and B's output is used.
func TestRawNATSAgentServesACapability(t *testing.T) {
	env := bustest.New(t)
	startOrchestrator(t, env.Bus)
	startWorker(t, agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{echo.Agent{}}})

	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	var mu sync.Mutex
	var steps []rawStep
	done := make(chan error, 1)
	go func() {
		done <- rawUpperAgent(ctx, env.URL, ready, func(s rawStep) { mu.Lock(); steps = append(steps, s); mu.Unlock() })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("raw agent: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("raw agent stopped before binding: %v", err)
	case <-time.After(deadline):
		t.Fatal("raw agent never bound its consumer")
	}
	if in, ok := instanceOf(t, openRegistry(t, env.Bus), "upper"); ok {
		t.Fatalf("upper is registered (%+v): this test needs it known only by its consumer", in)
	}

	rs := runWorkflow(t, env.Bus, "acme", "raw-wf", plan(
		step("A", echo.Capability, "from a"),
		step("B", "upper", "hello, agents", "A"),
	))
	c := completed(t, rs)
	if string(c.Result) != `"HELLO, AGENTS"` || string(c.Outputs["B"]) != `"HELLO, AGENTS"` {
		t.Errorf("result %s, B's output %s: want \"HELLO, AGENTS\"", c.Result, c.Outputs["B"])
	}

	mu.Lock()
	defer mu.Unlock()
	if len(steps) != 1 {
		t.Fatalf("raw agent saw %d steps, want 1: %+v", len(steps), steps)
	}
	s := steps[0]
	if s.Tenant != "acme" || s.Workflow != "raw-wf" || s.Step != "B" || s.Data.StepID != "B" || s.Data.Capability != "upper" || s.Data.Attempt != 1 {
		t.Errorf("raw agent saw headers %s/%s/%s and data %+v", s.Tenant, s.Workflow, s.Step, s.Data)
	}
	var a echo.Output
	if err := json.Unmarshal(s.Data.DependencyOutputs["A"], &a); err != nil || a.StepID != "A" || string(a.Input) != `"from a"` {
		t.Errorf("dependency_outputs[A] = %s (%v), want echo's output for A", s.Data.DependencyOutputs["A"], err)
	}
	// The reply was recorded once, as a completion by the raw agent.
	completions := 0
	for _, r := range rs {
		var st events.Status
		if r.Envelope.Type == events.TypeStatus && r.Envelope.Unmarshal(&st) == nil && st.StepID == "B" && st.State == events.StateCompleted {
			completions++
		}
	}
	if completions != 1 {
		t.Errorf("step B completed %d times in the event log, want once:%s", completions, describe(rs))
	}
}
