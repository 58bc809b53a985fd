package bus_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// stepsConfig is a consumer on the steps stream for one capability, with a
// fast backoff so that redeliveries happen in milliseconds.
func stepsConfig(t *testing.T, capability string) bus.ConsumeConfig {
	t.Helper()
	filter, err := subjects.StepFilter(capability)
	if err != nil {
		t.Fatal(err)
	}
	durable, err := subjects.StepConsumer(capability)
	if err != nil {
		t.Fatal(err)
	}
	return bus.ConsumeConfig{
		Stream: subjects.StreamSteps, Durable: durable, Filter: filter,
		Backoff: func(uint64) time.Duration { return time.Millisecond },
	}
}

// runConsume starts Consume in the background; stop cancels it and returns
// its result.
func runConsume(t *testing.T, b *bus.Bus, cfg bus.ConsumeConfig, h bus.Handler) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		err := b.Consume(ctx, cfg, h)
		if ctx.Err() == nil {
			t.Errorf("Consume returned before its context ended: %v", err)
		}
		done <- err
	}()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = recv(t, done, "Consume's return after cancel")
			if err != nil {
				t.Errorf("Consume after cancel = %v, want nil", err)
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// settled waits until the consumer has nothing pending or unacknowledged and
// the work-queue stream is empty, and returns the consumer's final info.
func settled(t *testing.T, env *bustest.Env, durable string) *jetstream.ConsumerInfo {
	t.Helper()
	var info *jetstream.ConsumerInfo
	eventually(t, func() (bool, string) {
		c, err := env.Bus.JetStream().Consumer(testCtx(t), subjects.StreamSteps, durable)
		if err != nil {
			return false, err.Error()
		}
		info, err = c.Info(testCtx(t))
		if err != nil {
			return false, err.Error()
		}
		msgs := streamMsgs(t, env, subjects.StreamSteps)
		return info.NumPending == 0 && info.NumAckPending == 0 && msgs == 0,
			fmt.Sprintf("pending %d, ack pending %d, waiting pulls %d, stream holds %d",
				info.NumPending, info.NumAckPending, info.NumWaiting, msgs)
	})
	return info
}

// deliveries records what a handler saw, safe for concurrent use.
type deliveries struct {
	mu  sync.Mutex
	log []string // "<envelope id>#<delivered>"
	ch  chan *bus.Delivery
}

func newDeliveries() *deliveries { return &deliveries{ch: make(chan *bus.Delivery, 100)} }

func (d *deliveries) add(dv *bus.Delivery) {
	d.mu.Lock()
	d.log = append(d.log, fmt.Sprintf("%s#%d", dv.Envelope.ID, dv.Delivered))
	d.mu.Unlock()
	d.ch <- dv
}

func (d *deliveries) snapshot() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.log...)
}

func TestConsumeAcksOnNil(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	seen := newDeliveries()
	runConsume(t, env.Bus, cfg, func(_ context.Context, d *bus.Delivery) error { seen.add(d); return nil })
	id := publishStep(t, env.Bus, "echo", 1)

	d := recv(t, seen.ch, "delivery")
	subj, _ := subjects.Step(tenant, "echo")
	if d.Envelope.ID != id || d.Subject != subj || d.Delivered != 1 || d.Sequence != 1 ||
		d.Envelope.Type != events.TypeStepRequested || d.Envelope.TenantID != tenant {
		t.Errorf("delivery = %+v, want %s on %s, delivered once, sequence 1", d, id, subj)
	}
	info := settled(t, env, cfg.Durable)
	if info.NumRedelivered != 0 || len(seen.snapshot()) != 1 {
		t.Errorf("redelivered %d, handled %q; want one delivery", info.NumRedelivered, seen.snapshot())
	}
}

func TestConsumeRedeliversOnError(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	seen := newDeliveries()
	runConsume(t, env.Bus, cfg, func(_ context.Context, d *bus.Delivery) error {
		seen.add(d)
		if d.Delivered < 3 {
			return fmt.Errorf("transient failure %d", d.Delivered)
		}
		return nil
	})
	id := publishStep(t, env.Bus, "echo", 1)
	settled(t, env, cfg.Durable)
	want := []string{id + "#1", id + "#2", id + "#3"}
	if got := seen.snapshot(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("deliveries = %q, want %q", got, want)
	}
}

func TestConsumeRecoversPanic(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	seen := newDeliveries()
	runConsume(t, env.Bus, cfg, func(_ context.Context, d *bus.Delivery) error {
		seen.add(d)
		if d.Delivered == 1 {
			panic("handler bug")
		}
		return nil
	})
	id := publishStep(t, env.Bus, "echo", 1)
	settled(t, env, cfg.Durable)
	want := []string{id + "#1", id + "#2"}
	if got := seen.snapshot(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("deliveries = %q, want %q (the panicking delivery redelivered once)", got, want)
	}
}

func TestConsumeTerminatesPoison(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.Concurrency = 1
	seen := newDeliveries()
	poison := publishStep(t, env.Bus, "echo", 1)
	good := publishStep(t, env.Bus, "echo", 2)
	runConsume(t, env.Bus, cfg, func(_ context.Context, d *bus.Delivery) error {
		seen.add(d)
		if d.Envelope.ID == poison {
			return fmt.Errorf("cannot parse input: %w", bus.ErrPoison)
		}
		return nil
	})
	info := settled(t, env, cfg.Durable)
	if info.NumRedelivered != 0 {
		t.Errorf("consumer redelivered %d messages, want 0", info.NumRedelivered)
	}
	want := []string{poison + "#1", good + "#1"}
	if got := seen.snapshot(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("deliveries = %q, want %q", got, want)
	}
}

func TestConsumeReportsMalformed(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.Concurrency = 1
	type report struct {
		subject string
		header  map[string][]string
		err     error
	}
	reports := make(chan report, 10)
	cfg.OnMalformed = func(_ context.Context, subject string, header map[string][]string, err error) {
		reports <- report{subject, header, err}
	}
	seen := newDeliveries()
	runConsume(t, env.Bus, cfg, func(_ context.Context, d *bus.Delivery) error { seen.add(d); return nil })

	// Deliberately raw: garbage with no ce- headers on a steps subject.
	subj, err := subjects.Step(tenant, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Bus.JetStream().Publish(testCtx(t), subj, []byte(`{"not":"an event"}`)); err != nil {
		t.Fatalf("raw publish: %v", err)
	}
	r := recv(t, reports, "OnMalformed report")
	if r.subject != subj {
		t.Errorf("OnMalformed subject = %q, want %q", r.subject, subj)
	}
	if !errors.Is(r.err, events.ErrMalformed) {
		t.Errorf("OnMalformed err = %v, want it to wrap events.ErrMalformed", r.err)
	}
	// A valid message after it proves the loop is still alive.
	good := publishStep(t, env.Bus, "echo", 1)
	if d := recv(t, seen.ch, "delivery after the malformed message"); d.Envelope.ID != good {
		t.Errorf("handler got %s, want %s", d.Envelope.ID, good)
	}
	info := settled(t, env, cfg.Durable)
	if info.NumRedelivered != 0 || len(reports) != 0 {
		t.Errorf("malformed message redelivered (%d redelivered, %d more reports), want terminated", info.NumRedelivered, len(reports))
	}
}

func TestConsumeConfigValidate(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	tests := []struct {
		name string
		cfg  bus.ConsumeConfig
		want []string
	}{
		{"no stream or durable", bus.ConsumeConfig{Concurrency: 1, AckWait: time.Second}, []string{"Stream and Durable"}},
		{"zero value before defaults", bus.ConsumeConfig{}, []string{"Stream and Durable", "concurrency 0", "ack wait 0s"}},
		{"everything wrong", bus.ConsumeConfig{Concurrency: -1, AckWait: time.Millisecond},
			[]string{"Stream and Durable", "concurrency -1", "ack wait 1ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkProblems(t, tt.cfg.Validate(), tt.want)
			called := false
			err := env.Bus.Consume(testCtx(t), tt.cfg, func(context.Context, *bus.Delivery) error { called = true; return nil })
			if err == nil || called {
				t.Errorf("Consume with an invalid config = %v (handler called %v), want an error at once", err, called)
			}
			if err := env.Bus.EnsureConsumer(testCtx(t), tt.cfg); err == nil {
				t.Error("EnsureConsumer with an invalid config succeeded")
			}
		})
	}
}

func TestEnsureAndHasConsumer(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	has, err := env.Bus.HasConsumer(testCtx(t), cfg.Stream, cfg.Durable)
	if err != nil || has {
		t.Fatalf("HasConsumer before EnsureConsumer = %v, %v; want false, nil", has, err)
	}
	for i := range 2 { // idempotent
		if err := env.Bus.EnsureConsumer(testCtx(t), cfg); err != nil {
			t.Fatalf("EnsureConsumer #%d: %v", i+1, err)
		}
	}
	has, err = env.Bus.HasConsumer(testCtx(t), cfg.Stream, cfg.Durable)
	if err != nil || !has {
		t.Fatalf("HasConsumer after EnsureConsumer = %v, %v; want true, nil", has, err)
	}
	// A message published before Consume starts is kept for the durable.
	id := publishStep(t, env.Bus, "echo", 1)
	seen := newDeliveries()
	runConsume(t, env.Bus, cfg, func(_ context.Context, d *bus.Delivery) error { seen.add(d); return nil })
	if d := recv(t, seen.ch, "delivery"); d.Envelope.ID != id {
		t.Errorf("delivered %s, want %s", d.Envelope.ID, id)
	}
	if _, err := env.Bus.HasConsumer(testCtx(t), "NO_SUCH_STREAM", cfg.Durable); err == nil {
		t.Error("HasConsumer on a missing stream succeeded, want an error")
	}
}
