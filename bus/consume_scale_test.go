package bus_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
)

// TestConsumeScalesOut: worker processes added to a capability add steps
// running at once, past the 256 unacknowledged messages a consumer once
// allowed: ten processes of 32 loops run 320 long steps at once.
func TestConsumeScalesOut(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.Concurrency = 32
	const processes, steps = 10, 320
	var running, peak atomic.Int64
	release := make(chan struct{})
	reached := make(chan struct{})
	var once sync.Once
	h := func(ctx context.Context, _ *bus.Delivery) error {
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if n == steps {
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
