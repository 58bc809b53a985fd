package watermill_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	abwm "github.com/agentbus/agentbus/watermill"
)

var errBadInput = errors.New("no text to shout")

// shout is a Watermill handler: it upper-cases the input's text. fails
// says how many of its first calls fail (transiently), block makes the
// next call wait until it is released or its step's context ends.
type shout struct {
	fails   atomic.Int64
	calls   atomic.Int64
	block   atomic.Bool
	started chan string // the delivery of each call, as it starts
	mu      sync.Mutex
	seen    []message.Metadata
}

func (s *shout) handle(m *message.Message) ([]*message.Message, error) {
	s.calls.Add(1)
	s.mu.Lock()
	s.seen = append(s.seen, m.Metadata)
	s.mu.Unlock()
	if s.started != nil {
		s.started <- m.Metadata.Get(abwm.MetaDelivery)
	}
	if s.block.Load() {
		<-m.Context().Done()
		return nil, m.Context().Err()
	}
	if s.fails.Add(-1) >= 0 {
		return nil, errors.New("a flaky dependency")
	}
	var in struct{ Text string }
	if err := json.Unmarshal(m.Payload, &in); err != nil || in.Text == "" {
		return nil, errBadInput
	}
	out, _ := json.Marshal(map[string]string{"text": strings.ToUpper(in.Text), "correlation": middleware.MessageCorrelationID(m)})
	return []*message.Message{message.NewMessage(wm.NewUUID(), out)}, nil
}

// startWorker serves the Watermill agent — retry (2 in process), a
// poison queue for bad input, correlation ids — on a worker of its own.
func startWorker(t *testing.T, env *bustest.Env, s *shout, poison message.Publisher, maxDeliver int) context.CancelFunc {
	t.Helper()
	poisoned, err := middleware.PoisonQueueWithFilter(poison, "poison", func(err error) bool { return errors.Is(err, errBadInput) })
	if err != nil {
		t.Fatal(err)
	}
	retry := middleware.Retry{MaxRetries: 2, InitialInterval: time.Millisecond, ShouldRetry: func(p middleware.RetryParams) bool {
		return !errors.Is(p.Err, errBadInput)
	}}
	a := abwm.Agent(agents.Card{Name: "shout", Version: "1.0.0", Capabilities: []string{"shout"}, Description: "Shouts the input's text."},
		s.handle, middleware.CorrelationID, poisoned, retry.Middleware)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{a}, Logger: bustest.Logger(t),
		MaxDeliver: maxDeliver, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, ShutdownGrace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

func shoutPlan(text string) *events.Plan {
	in, _ := json.Marshal(map[string]string{"text": text})
	return &events.Plan{Steps: []events.PlanStep{{ID: "loud", Capability: "shout", Input: in}}}
}

// A capability served by a Watermill handler with retry, poison queue and
// correlation id middleware: a flaky call is retried in process, a bad
// input goes to the poison queue and fails the step, a handler that
// keeps failing is redelivered by the worker runtime and dead-lettered
// after MaxDeliver, and a step whose worker stops mid-run is handed back
// and completed by another.
func TestWatermillHandlerAgent(t *testing.T) {
	env := startStack(t)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	goch := gochannel.NewGoChannel(gochannel.Config{Persistent: true}, wm.NopLogger{})
	defer goch.Close()
	poison, err := goch.Subscribe(ctx, "poison")
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewNATS(env.Bus, client.NATSConfig{})
	if err != nil {
		t.Fatal(err)
	}
	s := &shout{}
	s.fails.Store(2) // the in-process retry absorbs both
	startWorker(t, env, s, goch, 3)

	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "w-ok", Plan: shoutPlan("hello")}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Wait(ctx, "w-ok")
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Text, Correlation string }
	if err := json.Unmarshal(res.Result, &out); err != nil || out.Text != "HELLO" || out.Correlation != "w-ok" {
		t.Fatalf("result %s (%v)", res.Result, err)
	}
	if s.calls.Load() != 3 {
		t.Fatalf("%d calls, want 3 (two retried in process)", s.calls.Load())
	}
	for _, md := range s.seen {
		if md.Get(abwm.MetaDelivery) != "1" || md.Get(abwm.MetaWorkflow) != "w-ok" || md.Get(abwm.MetaCapability) != "shout" {
			t.Fatalf("metadata %v: want one delivery of w-ok's shout step", md)
		}
	}

	// bad input: poisoned, and the step fails for good
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "w-bad", Plan: shoutPlan("")}); err != nil {
		t.Fatal(err)
	}
	var we *client.WorkflowError
	if _, err := c.Wait(ctx, "w-bad"); !errors.As(err, &we) || !strings.Contains(we.Message, "no output") {
		t.Fatalf("bad input ended %v", err)
	}
	select {
	case m := <-poison:
		if m.Metadata.Get(abwm.MetaWorkflow) != "w-bad" || !strings.Contains(m.Metadata.Get(middleware.ReasonForPoisonedKey), errBadInput.Error()) {
			t.Fatalf("poisoned message metadata %v", m.Metadata)
		}
		m.Ack()
	case <-ctx.Done():
		t.Fatal("nothing reached the poison queue")
	}

	// always failing: 3 in process per delivery, 3 deliveries, dead letter
	s.fails.Store(1 << 30)
	before := s.calls.Load()
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "w-dead", Plan: shoutPlan("hello")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx, "w-dead"); !errors.As(err, &we) || !strings.Contains(we.Message, "failed on delivery 3 of 3") {
		t.Fatalf("a handler that keeps failing ended %v", err)
	}
	dl, err := env.Bus.JetStream().Stream(ctx, subjects.StreamDeadLetter)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := dl.GetLastMsgForSubject(ctx, "agentbus.default.deadletter.shout")
	if err != nil || msg.Header.Get("ce-workflowid") != "w-dead" || !strings.Contains(msg.Header.Get("Agentbus-Deadletter-Reason"), "a flaky dependency") {
		t.Fatalf("dead letter %+v, %v", msg, err)
	}
	if n := s.calls.Load() - before; n != 9 {
		t.Fatalf("%d calls, want 9 (3 deliveries × 3 tries)", n)
	}
}

// A step whose worker stops while the Watermill handler runs is handed
// back and run by another worker, as delivery 2.
func TestWatermillHandlerRedeliveredAfterItsWorkerStops(t *testing.T) {
	env := startStack(t)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	goch := gochannel.NewGoChannel(gochannel.Config{}, wm.NopLogger{})
	defer goch.Close()
	c, err := client.NewNATS(env.Bus, client.NATSConfig{})
	if err != nil {
		t.Fatal(err)
	}
	first := &shout{started: make(chan string, 4)}
	first.block.Store(true)
	stop := startWorker(t, env, first, goch, 5)
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "w-crash", Plan: shoutPlan("again")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.started:
	case <-ctx.Done():
		t.Fatal("the first worker never started the step")
	}
	stop()
	second := &shout{started: make(chan string, 4)}
	startWorker(t, env, second, goch, 5)
	res, err := c.Wait(ctx, "w-crash")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Result), "AGAIN") {
		t.Fatalf("result %s", res.Result)
	}
	if d := <-second.started; d != "2" {
		t.Fatalf("the second worker got delivery %s, want 2", d)
	}
}
