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

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/subjects"
)

// deadline bounds every wait for an event in these tests: generous, so a
// busy 2-core machine under -race never flakes, yet a hang still fails.
const deadline = 30 * time.Second

// funcAgent is an agent whose single capability is its name and whose
// handler is a function.
type funcAgent struct {
	card   agents.Card
	handle agents.HandlerFunc
}

var _ agents.Agent = funcAgent{}

func newAgent(name string, h agents.HandlerFunc) funcAgent {
	return funcAgent{
		card: agents.Card{
			Name: name, Version: "0.1.0", Capabilities: []string{name},
			Description: "Test agent " + name + ".",
		},
		handle: h,
	}
}

func (a funcAgent) Card() agents.Card { return a.card }

func (a funcAgent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	return a.handle(ctx, req, emit)
}

// checkedAgent is a funcAgent that implements agents.HealthChecker.
type checkedAgent struct {
	funcAgent
	health func(ctx context.Context) error
}

var _ agents.HealthChecker = checkedAgent{}

func (a checkedAgent) Health(ctx context.Context) error { return a.health(ctx) }

// okOutput is a handler result for agents whose output does not matter.
var okOutput = json.RawMessage(`{"ok":true}`)

// runningWorker is a worker whose Run is going in a goroutine.
type runningWorker struct {
	w      *agents.Worker
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// startWorker builds a worker, runs Start synchronously (so its consumers
// and registrations exist when it returns), then Run in a goroutine. The
// worker is stopped at cleanup, before the test's server.
func startWorker(t testing.TB, cfg agents.WorkerConfig) *runningWorker {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = bustest.Logger(t)
	}
	w, err := agents.NewWorker(cfg)
	if err != nil {
		t.Fatalf("new worker: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.Start(ctx); err != nil {
		cancel()
		t.Fatalf("start worker %s: %v", w.Name(), err)
	}
	rw := &runningWorker{w: w, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rw.done)
		rw.err = w.Run(ctx)
	}()
	t.Cleanup(func() { rw.stop(t) })
	return rw
}

// stop cancels the worker's context and waits for Run to return; it is safe
// to call twice.
func (rw *runningWorker) stop(t testing.TB) error {
	t.Helper()
	rw.cancel()
	select {
	case <-rw.done:
		return rw.err
	case <-time.After(deadline):
		t.Errorf("worker %s: Run did not return within %s of its context ending", rw.w.Name(), deadline)
		return nil
	}
}

// startOrchestrator runs an orchestrator on b until cleanup.
func startOrchestrator(t testing.TB, b *bus.Bus) *orchestrator.Orchestrator {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	o, err := orchestrator.New(ctx, orchestrator.Config{Bus: b, Logger: bustest.Logger(t)})
	if err != nil {
		cancel()
		t.Fatalf("new orchestrator: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return o
}

// submit publishes a workflow submission as the gateway would.
func submit(t testing.TB, b *bus.Bus, tenant, workflow string, sub events.WorkflowSubmitted) {
	t.Helper()
	subj, err := subjects.Submit(tenant)
	if err != nil {
		t.Fatal(err)
	}
	key := events.SubmitKey(tenant, workflow)
	env, err := events.New(events.TypeWorkflowSubmitted, key, events.SourceGateway, tenant, workflow, "", sub)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := b.Publish(ctx, subj, env, key); err != nil {
		t.Fatalf("submit %s: %v", workflow, err)
	}
}

// collect follows a workflow's client events until its terminal event, or
// fails the test at the deadline.
func collect(t testing.TB, b *bus.Bus, tenant, workflow string) []bus.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var out []bus.Record
	err := b.Follow(ctx, tenant, workflow, 0, func(_ context.Context, r bus.Record) error {
		out = append(out, r)
		if r.Envelope.Type.Terminal() {
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("follow %s: %v (got %d events:%s)", workflow, err, len(out), describe(out))
	}
	return out
}

func describe(rs []bus.Record) string {
	var s strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&s, "\n  %s %s %s", r.Envelope.Type.Short(), r.Envelope.StepID, r.Envelope.Data)
	}
	return s.String()
}

// completed returns the Complete event that ends rs, failing otherwise.
func completed(t testing.TB, rs []bus.Record) events.Complete {
	t.Helper()
	end := rs[len(rs)-1].Envelope
	if end.Type != events.TypeComplete {
		t.Fatalf("workflow ended with %s, want complete:%s", end.Type.Short(), describe(rs))
	}
	var c events.Complete
	if err := end.Unmarshal(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// failed returns the Error event that ends rs, failing otherwise.
func failed(t testing.TB, rs []bus.Record) events.Error {
	t.Helper()
	end := rs[len(rs)-1].Envelope
	if end.Type != events.TypeError {
		t.Fatalf("workflow ended with %s, want error:%s", end.Type.Short(), describe(rs))
	}
	var e events.Error
	if err := end.Unmarshal(&e); err != nil {
		t.Fatal(err)
	}
	return e
}

func plan(steps ...events.PlanStep) *events.Plan { return &events.Plan{Steps: steps} }

func step(id, capability string, input any, deps ...string) events.PlanStep {
	in, _ := json.Marshal(input)
	return events.PlanStep{ID: id, Capability: capability, Input: in, DependsOn: deps}
}

// runWorkflow submits a plan and returns its events up to the terminal one.
func runWorkflow(t testing.TB, b *bus.Bus, tenant, workflow string, p *events.Plan) []bus.Record {
	t.Helper()
	submit(t, b, tenant, workflow, events.WorkflowSubmitted{Query: workflow, Plan: p})
	return collect(t, b, tenant, workflow)
}

// waitFor polls cond until it holds or the deadline passes; cond returns
// whether it holds and, if not, what it saw (for the failure message).
func waitFor(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(within)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("waited %s for %s; last saw: %s", within, what, saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// deadLetter returns the newest message on a capability's dead-letter
// subject, failing if there is none.
func deadLetter(t testing.TB, b *bus.Bus, tenant, capability string) *jetstream.RawStreamMsg {
	t.Helper()
	subj, err := subjects.DeadLetter(tenant, capability)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	s, err := b.JetStream().Stream(ctx, subjects.StreamDeadLetter)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("nothing dead-lettered on %s in %s", subj, subjects.StreamDeadLetter)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// streamMsgs counts the messages a stream holds now.
func streamMsgs(t testing.TB, b *bus.Bus, stream string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	s, err := b.JetStream().Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// waitStreamEmpty waits until a work-queue stream holds no message (acks
// are asynchronous, so the last one may lag the workflow's terminal event).
func waitStreamEmpty(t testing.TB, b *bus.Bus, stream string) {
	t.Helper()
	waitFor(t, deadline, stream+" to be empty", func() (bool, string) {
		n := streamMsgs(t, b, stream)
		return n == 0, fmt.Sprintf("%d messages", n)
	})
}

// counter counts calls per key; safe for concurrent use.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
	return c.n[key]
}

func (c *counter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}
