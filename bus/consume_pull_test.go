package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
)

// TestConsumeBusyLoopLeavesWorkForOthers: a process whose every loop is busy
// does not take more messages, so a second process runs them at once
// instead of after the first one's AckWait.
func TestConsumeBusyLoopLeavesWorkForOthers(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.Concurrency = 1
	first := publishStep(t, env.Bus, "echo", 1)
	second := publishStep(t, env.Bus, "echo", 2)

	busy := make(chan string, 2)
	release := make(chan struct{})
	runConsume(t, env.Bus, cfg, func(ctx context.Context, d *bus.Delivery) error {
		busy <- d.Envelope.ID
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if id := recv(t, busy, "the busy loop's message"); id != first {
		t.Fatalf("busy loop got %s, want %s first", id, first)
	}

	other := make(chan string, 2)
	runConsume(t, bustest.Connect(t, env), cfg, func(_ context.Context, d *bus.Delivery) error {
		other <- d.Envelope.ID
		return nil
	})
	if id := recv(t, other, "the second process's message"); id != second {
		t.Fatalf("second process got %s, want %s", id, second)
	}
	close(release)
	settled(t, env, cfg.Durable)
	if len(busy) != 0 || len(other) != 0 {
		t.Errorf("extra deliveries: busy loop %d, other %d", len(busy), len(other))
	}
}

// TestConsumeHandBack: ErrHandBack gives the message up without the error
// backoff, for immediate redelivery.
func TestConsumeHandBack(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.Backoff = func(uint64) time.Duration { return time.Hour } // an ordinary error would stall the test
	seen := newDeliveries()
	runConsume(t, env.Bus, cfg, func(_ context.Context, d *bus.Delivery) error {
		seen.add(d)
		if d.Delivered == 1 {
			return fmt.Errorf("shutting down: %w", bus.ErrHandBack)
		}
		return nil
	})
	id := publishStep(t, env.Bus, "echo", 1)
	settled(t, env, cfg.Durable)
	want := []string{id + "#1", id + "#2"}
	if got := seen.snapshot(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("deliveries = %q, want %q", got, want)
	}
}

// TestConsumeMaxDeliver: after MaxDeliver failed deliveries the message is
// no longer delivered (it stays in the stream for an operator or dead letter).
func TestConsumeMaxDeliver(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.MaxDeliver = 2
	cfg.Concurrency = 1
	seen := newDeliveries()
	failing := publishStep(t, env.Bus, "echo", 1)
	runConsume(t, env.Bus, cfg, func(_ context.Context, d *bus.Delivery) error {
		seen.add(d)
		if d.Envelope.ID == failing {
			return fmt.Errorf("always fails")
		}
		return nil
	})
	for i := 1; i <= 2; i++ {
		if d := recv(t, seen.ch, fmt.Sprintf("delivery %d", i)); d.Envelope.ID != failing || d.Delivered != uint64(i) {
			t.Fatalf("delivery %d = %s#%d, want %s#%d", i, d.Envelope.ID, d.Delivered, failing, i)
		}
	}
	// A later message is still served, and the failing one is not retried.
	good := publishStep(t, env.Bus, "echo", 2)
	if d := recv(t, seen.ch, "the next message"); d.Envelope.ID != good {
		t.Fatalf("got %s#%d, want %s: a third delivery beyond MaxDeliver=2?", d.Envelope.ID, d.Delivered, good)
	}
}

func TestConsumeCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	called := false
	if err := env.Bus.Consume(ctx, stepsConfig(t, "echo"), func(context.Context, *bus.Delivery) error {
		called = true
		return nil
	}); err != nil || called {
		t.Fatalf("Consume with a cancelled context = %v (handler called %v), want nil at once", err, called)
	}
}
