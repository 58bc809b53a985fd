package bus_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

// TestConsumeScalesOut: worker processes added to a capability add steps
// running at once, past the 256 unacknowledged messages a consumer once
// allowed: ten processes of 32 loops run 320 long steps at once.
func TestConsumeScalesOut(t *testing.T) {
	t.Parallel()
	scaleOut(t, 10)
}

// TestConsumeScalesPastTheDefaultWaitingPulls: twenty processes of 32
// loops run 640 long steps at once. Each idle loop keeps a pull request
// waiting on the consumer, and the server holds 512 by default; a pull
// past that was dropped without a word (its heartbeats never came), so
// the loops of a seventeenth process sat out a backlog for 10 s at a time.
func TestConsumeScalesPastTheDefaultWaitingPulls(t *testing.T) {
	if testing.Short() {
		t.Skip("640 loops")
	}
	t.Parallel()
	scaleOut(t, 20)
}

// scaleOut runs processes Consumes of 32 loops each on one capability
// and checks that as many long steps as there are loops run at once.
func scaleOut(t *testing.T, processes int) {
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.Concurrency = 32
	steps := processes * cfg.Concurrency
	var running, peak atomic.Int64
	release := make(chan struct{})
	reached := make(chan struct{})
	var once sync.Once
	h := func(ctx context.Context, _ *bus.Delivery) error {
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if n == int64(steps) {
			once.Do(func() { close(reached) })
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for i := range processes {
		b := env.Bus
		if i > 0 {
			b = bustest.Connect(t, env)
		}
		runConsume(t, b, cfg, h)
	}
	js := env.Bus.JetStream()
	eventually(t, func() (bool, string) {
		c, err := js.Consumer(testCtx(t), cfg.Stream, cfg.Durable)
		if err != nil {
			return false, err.Error()
		}
		info, err := c.Info(testCtx(t))
		if err != nil {
			return false, err.Error()
		}
		return info.NumWaiting == processes*cfg.Concurrency,
			fmt.Sprintf("%d pulls waiting, want %d (consumer MaxWaiting %d)", info.NumWaiting, processes*cfg.Concurrency, info.Config.MaxWaiting)
	})
	for i := range steps {
		publishStep(t, env.Bus, "echo", i)
	}
	select {
	case <-reached:
	case <-testCtx(t).Done():
		t.Fatalf("at most %d of %d steps ran at once, with %d loops free for them", peak.Load(), steps, processes*cfg.Concurrency)
	}
	close(release)
	settled(t, env, cfg.Durable)
}

// TestConsumeKeepsAnOlderConsumersWaitingPulls: a step consumer made by an
// older agentbus, with the server's default of 512 waiting pulls, is
// used as it is (the server refuses to change MaxWaiting): Consume
// starts on it and runs its steps. One made new holds consumerMaxWaiting.
func TestConsumeKeepsAnOlderConsumersWaitingPulls(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	js := env.Bus.JetStream()
	old := stepsConfig(t, "echo")
	if _, err := js.CreateOrUpdateConsumer(testCtx(t), old.Stream, jetstream.ConsumerConfig{
		Durable: old.Durable, FilterSubject: old.Filter, AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	fresh := stepsConfig(t, "sleep")
	for _, cfg := range []bus.ConsumeConfig{old, fresh} {
		ran := make(chan struct{}, 1)
		runConsume(t, env.Bus, cfg, func(context.Context, *bus.Delivery) error {
			ran <- struct{}{}
			return nil
		})
		capability := "echo"
		if cfg.Durable == fresh.Durable {
			capability = "sleep"
		}
		publishStep(t, env.Bus, capability, 1)
		select {
		case <-ran:
		case <-testCtx(t).Done():
			t.Fatalf("%s: the step did not run", cfg.Durable)
		}
	}
	for durable, want := range map[string]int{old.Durable: 512, fresh.Durable: 1 << 16} {
		c, err := js.Consumer(testCtx(t), subjects.StreamSteps, durable)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.CachedInfo().Config.MaxWaiting; got != want {
			t.Errorf("consumer %s holds %d waiting pulls, want %d", durable, got, want)
		}
	}
}
