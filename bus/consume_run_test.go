package bus_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
)

func TestConsumeHonoursConcurrency(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.Concurrency = 2
	const n = 10
	for i := range n {
		publishStep(t, env.Bus, "echo", i)
	}
	var cur, peak atomic.Int32
	release := make(chan struct{})
	runConsume(t, env.Bus, cfg, func(ctx context.Context, _ *bus.Delivery) error {
		now := cur.Add(1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		defer cur.Add(-1)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	// Let one handler finish at a time, each time once the loop has filled
	// every slot it may use.
	for done := range n {
		want := int32(min(cfg.Concurrency, n-done))
		eventually(t, func() (bool, string) {
			return cur.Load() >= want, fmt.Sprintf("%d handlers running after %d finished, want %d", cur.Load(), done, want)
		})
		if p := peak.Load(); p > int32(cfg.Concurrency) {
			t.Fatalf("%d handlers ran at once, Concurrency is %d", p, cfg.Concurrency)
		}
		release <- struct{}{}
	}
	settled(t, env, cfg.Durable)
	if p := peak.Load(); p != int32(cfg.Concurrency) {
		t.Errorf("at most %d handlers ran at once, want exactly Concurrency=%d", p, cfg.Concurrency)
	}
}

func TestConsumeShutdownWaitsForInFlight(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	started := make(chan struct{})
	var finished atomic.Bool
	var hctxErr atomic.Value
	done := make(chan error, 1)
	go func() {
		err := env.Bus.Consume(ctx, cfg, func(hctx context.Context, _ *bus.Delivery) error {
			close(started)
			<-ctx.Done()                      // the loop is shutting down…
			time.Sleep(50 * time.Millisecond) // …while this handler still works
			hctxErr.Store(fmt.Sprint(hctx.Err()))
			finished.Store(true)
			return nil
		})
		if !finished.Load() {
			err = errors.New("Consume returned before its in-flight handler finished")
		}
		done <- err
	}()
	publishStep(t, env.Bus, "echo", 1)
	recv(t, started, "handler start")
	cancel()
	if err := recv(t, done, "Consume's return"); err != nil {
		t.Fatalf("Consume after cancel = %v, want nil", err)
	}
	if got := hctxErr.Load(); got != "<nil>" {
		t.Errorf("handler context was %v during the shutdown grace, want still live", got)
	}
	settled(t, env, cfg.Durable) // the in-flight handler's ack went through
}

func TestConsumeShutdownGraceCancelsHandlers(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.ShutdownGrace = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	started := make(chan struct{})
	handlerErr := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		done <- env.Bus.Consume(ctx, cfg, func(hctx context.Context, _ *bus.Delivery) error {
			close(started)
			select {
			case <-hctx.Done():
				handlerErr <- hctx.Err()
			case <-time.After(testTimeout):
				handlerErr <- errors.New("handler context never ended")
			}
			return hctx.Err()
		})
	}()
	publishStep(t, env.Bus, "echo", 1)
	recv(t, started, "handler start")
	begin := time.Now()
	cancel()
	if err := recv(t, done, "Consume's return"); err != nil {
		t.Fatalf("Consume after cancel = %v, want nil", err)
	}
	if d := time.Since(begin); d < cfg.ShutdownGrace {
		t.Errorf("Consume returned %s after cancel, before the %s grace", d, cfg.ShutdownGrace)
	}
	if err := recv(t, handlerErr, "handler result"); !errors.Is(err, context.Canceled) {
		t.Errorf("handler context ended with %v, want context.Canceled", err)
	}
}

func TestConsumeSharedDurable(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.Concurrency = 1
	const n = 40
	var mu sync.Mutex
	counts := map[string]int{}
	byLoop := [2]int{}
	started := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	var once [2]sync.Once
	handler := func(loop int) bus.Handler {
		return func(_ context.Context, d *bus.Delivery) error {
			once[loop].Do(func() { close(started[loop]) })
			// Hold the first message until the other loop has one too, so
			// that both demonstrably share the durable.
			select {
			case <-started[1-loop]:
			case <-time.After(testTimeout):
				return errors.New("the other loop never got a message")
			}
			mu.Lock()
			counts[d.Envelope.ID]++
			byLoop[loop]++
			mu.Unlock()
			return nil
		}
	}
	// Both loops create the durable at once, as two workers starting together
	// do. nats-server makes a new consumer visible to the second create before
	// its pull subscription exists, so a loop's first pull may get 503 no
	// responders; Consume must retry it rather than idle.
	runConsume(t, env.Bus, cfg, handler(0))
	runConsume(t, bustest.Connect(t, env), cfg, handler(1))
	want := map[string]bool{}
	for i := range n {
		want[publishStep(t, env.Bus, "echo", i)] = true
	}
	settled(t, env, cfg.Durable)
	mu.Lock()
	defer mu.Unlock()
	if len(counts) != n {
		t.Errorf("%d distinct messages handled, want %d", len(counts), n)
	}
	for id, c := range counts {
		if c != 1 || !want[id] {
			t.Errorf("message %s handled %d times (published: %v), want once", id, c, want[id])
		}
	}
	if byLoop[0] == 0 || byLoop[1] == 0 || byLoop[0]+byLoop[1] != n {
		t.Errorf("loops handled %d and %d messages, want both some and %d in all", byLoop[0], byLoop[1], n)
	}
}

// TestConsumeNoHandlerAfterReturn: with every loop busy, Consume does not
// pull (so nothing waits in a local buffer while its AckWait runs out), no
// handler starts after Consume returned, and the message it did not take is
// still there for the next consumer.
func TestConsumeNoHandlerAfterReturn(t *testing.T) {
	env := bustest.New(t)
	for iter := range 3 {
		capability := fmt.Sprintf("late%d", iter)
		cfg := stepsConfig(t, capability)
		cfg.Concurrency = 1
		publishStep(t, env.Bus, capability, 1)
		publishStep(t, env.Bus, capability, 2)

		ctx, cancel := context.WithCancel(testCtx(t))
		var returned atomic.Bool
		var handlers atomic.Int32
		first := make(chan struct{})
		late := make(chan string, 2)
		done := make(chan error, 1)
		go func() {
			err := env.Bus.Consume(ctx, cfg, func(hctx context.Context, d *bus.Delivery) error {
				if handlers.Add(1) == 1 {
					close(first)
					<-ctx.Done() // busy until shutdown begins
					return nil
				}
				if returned.Load() || hctx.Err() != nil {
					late <- d.Envelope.ID
				}
				return nil
			})
			returned.Store(true)
			done <- err
		}()
		recv(t, first, "first handler")
		eventually(t, func() (bool, string) {
			c, err := env.Bus.JetStream().Consumer(testCtx(t), cfg.Stream, cfg.Durable)
			if err != nil {
				return false, err.Error()
			}
			info, err := c.Info(testCtx(t))
			if err != nil {
				return false, err.Error()
			}
			return info.NumAckPending == 1 && info.NumPending == 1,
				fmt.Sprintf("ack pending %d, pending %d, want 1 and 1 (no prefetch)", info.NumAckPending, info.NumPending)
		})
		cancel()
		if err := recv(t, done, "Consume's return"); err != nil {
			t.Fatalf("Consume after cancel = %v, want nil", err)
		}
		select {
		case id := <-late:
			t.Fatalf("the handler for %s started after Consume returned (iteration %d)", id, iter)
		default:
		}
		// The second message was never taken: a new Consume gets it.
		got := make(chan struct{}, 1)
		ctx2, cancel2 := context.WithCancel(testCtx(t))
		go func() {
			_ = env.Bus.Consume(ctx2, cfg, func(context.Context, *bus.Delivery) error {
				select {
				case got <- struct{}{}:
				default:
				}
				return nil
			})
		}()
		recv(t, got, "the untaken message")
		cancel2()
	}
}

// TestConsumeStoppingHandsBackToOthers: a loop that stops while a handler
// runs, and the handler gives its message up at once, hands the message
// back only after withdrawing its idle loops' pull requests. The message
// then goes to the next loop at once, as delivery 2, rather than to a
// request of the stopping one (whose subscription is going away) to
// wait out its AckWait there.
func TestConsumeStoppingHandsBackToOthers(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.Concurrency = 32 // 31 idle loops, each with a request at the server
	cfg.AckWait = time.Minute
	for round := range 3 {
		ctx, cancel := context.WithCancel(testCtx(t))
		started := make(chan struct{}, 1)
		done := make(chan error, 1)
		go func() {
			done <- env.Bus.Consume(ctx, cfg, func(context.Context, *bus.Delivery) error {
				started <- struct{}{}
				<-ctx.Done() // the loop stops: give the message up now
				return fmt.Errorf("stopping: %w", bus.ErrHandBack)
			})
		}()
		id := publishStep(t, env.Bus, "echo", round+1)
		recv(t, started, "the first loop's handler")
		cancel()
		if err := recv(t, done, "Consume's return"); err != nil {
			t.Fatal(err)
		}
		seen := newDeliveries()
		stop := runConsume(t, env.Bus, cfg, func(_ context.Context, d *bus.Delivery) error {
			seen.add(d)
			return nil
		})
		select {
		case d := <-seen.ch:
			if d.Envelope.ID != id || d.Delivered != 2 {
				t.Fatalf("round %d: the next loop got %s delivery %d, want %s delivery 2", round, d.Envelope.ID, d.Delivered, id)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the handed-back message did not reach the next loop in 10 s (AckWait %s)", round, cfg.AckWait)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
}
