package bus_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// take runs Take on every result subject until the test ends and returns
// a function that stops it and waits for Take to return.
func take(t *testing.T, b *bus.Bus, concurrency int, h func(context.Context, string, events.Envelope) error) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.Take(ctx, bus.TakeConfig{Subject: subjects.AllResults, Queue: "q", Concurrency: concurrency}, h)
	}()
	// Subscribed once a request finds a responder.
	probe := statusEvent(t, "probe", 0)
	deadline := time.Now().Add(testTimeout)
	for {
		hctx, hcancel := context.WithTimeout(context.Background(), time.Second)
		err := b.Hand(hctx, "agentbus.default.result.probe", probe)
		hcancel()
		if !errors.Is(err, bus.ErrNoResponder) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Take never listened")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Take: %v", err)
				}
			case <-time.After(testTimeout):
				t.Error("Take did not return after its context ended")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestHandIsTakenOrSaysWhyNot(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	ctx := testCtx(t)
	msg := statusEvent(t, "wf-1", 1)

	// Nobody listens: at once, not after the deadline.
	start := time.Now()
	if err := env.Bus.Hand(ctx, "agentbus.default.result.wf-1", msg); !errors.Is(err, bus.ErrNoResponder) {
		t.Fatalf("with nobody taking: %v, want ErrNoResponder", err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("no responder took %s to say so", waited)
	}

	var got atomic.Value
	take(t, env.Bus, 1, func(_ context.Context, subject string, e events.Envelope) error {
		if e.WorkflowID == "refused" {
			return errors.New("not today")
		}
		got.Store(subject + " " + e.ID)
		return nil
	})
	if err := env.Bus.Hand(ctx, "agentbus.default.result.wf-1", msg); err != nil {
		t.Fatalf("taken: %v", err)
	}
	if want := "agentbus.default.result.wf-1 " + msg.ID; got.Load() != want {
		t.Errorf("handler got %v, want %s", got.Load(), want)
	}
	err := env.Bus.Hand(ctx, "agentbus.default.result.refused", statusEvent(t, "refused", 1))
	if !errors.Is(err, bus.ErrNotTaken) || !strings.Contains(err.Error(), "not today") {
		t.Errorf("refused: %v, want ErrNotTaken with the handler's reason", err)
	}
	// A body that is no CloudEvent is refused with the reason, unhandled.
	resp, err := env.Bus.Conn().Request("agentbus.default.result.wf-2", []byte(`{"no":"headers"}`), testTimeout)
	if err != nil || !strings.HasPrefix(string(resp.Data), "-ERR ") {
		t.Errorf("malformed: %v %q, want a refusal", err, respData(resp))
	}
}

func respData(m *nats.Msg) string {
	if m == nil {
		return ""
	}
	return string(m.Data)
}

// TestTakeBoundsItsConcurrencyAndDrains: no more than Concurrency
// handlers run at once; a sender that stops waiting gets an error (and
// would send the durable way); a stopping Take lets its running handlers
// answer before it returns.
func TestTakeBoundsItsConcurrencyAndDrains(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	ctx := testCtx(t)
	release := make(chan struct{})
	var running, peak atomic.Int64
	stop := take(t, env.Bus, 2, func(ctx context.Context, _ string, e events.Envelope) error {
		if e.WorkflowID == "probe" {
			return nil
		}
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-release
		return nil
	})
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			hctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			errs <- env.Bus.Hand(hctx, "agentbus.default.result.wf-c", statusEvent(t, "wf-c", i))
		}()
	}
	for range 4 {
		if err := <-errs; err == nil {
			t.Error("a handler blocked on release answered")
		}
	}
	if p := peak.Load(); p != 2 {
		t.Errorf("%d handlers ran at once, want 2 (the concurrency)", p)
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Take returned with handlers still running")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case <-stopped:
	case <-time.After(testTimeout):
		t.Fatal("Take did not return once its handlers finished")
	}
}

// TestHandOfferGetsAMessageBack: a handed message's offer reaches the
// handler with the time its sender stops waiting; a message the handler
// returns comes back with the verdict, whole, and none comes back when it
// returns none or refuses.
func TestHandOfferGetsAMessageBack(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	ctx := testCtx(t)
	back := statusEvent(t, "wf-back", 7)
	type seen struct {
		offer string
		until time.Time
		lease time.Duration
	}
	got := make(chan seen, 8)
	ctx2, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		_ = env.Bus.TakeOffers(ctx2, bus.TakeConfig{Subject: subjects.AllResults, Queue: "q"}, func(_ context.Context, m bus.Handed) (*events.Envelope, error) {
			got <- seen{m.Offer, m.OfferUntil, m.OfferLease}
			switch m.Env.WorkflowID {
			case "wf-none":
				return nil, nil
			case "wf-refused":
				return &back, errors.New("no")
			}
			return &back, nil
		})
	}()
	var reply *events.Envelope
	deadline := time.Now().Add(testTimeout)
	for {
		hctx, hcancel := context.WithTimeout(ctx, 2*time.Second)
		r, err := env.Bus.HandOffer(hctx, "agentbus.default.result.wf-1", statusEvent(t, "wf-1", 1), bus.Offer{Capability: "echo", Lease: 45 * time.Second})
		hcancel()
		if err == nil {
			reply = r
			break
		}
		if !errors.Is(err, bus.ErrNoResponder) || time.Now().After(deadline) {
			t.Fatalf("HandOffer: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s := <-got
	if s.offer != "echo" || time.Until(s.until) <= 0 || time.Until(s.until) > 2*time.Second || s.lease != 45*time.Second {
		t.Errorf("handler saw offer %q until %s with a lease of %s, want echo within the sender's 2 s, with its 45 s", s.offer, s.until, s.lease)
	}
	if reply == nil || reply.ID != back.ID || reply.WorkflowID != "wf-back" || string(reply.Data) != string(back.Data) || reply.Type != back.Type {
		t.Fatalf("got back %+v, want %+v", reply, back)
	}
	if r, err := env.Bus.HandOffer(ctx, "agentbus.default.result.wf-none", statusEvent(t, "wf-none", 1), bus.Offer{Capability: "echo"}); err != nil || r != nil {
		t.Errorf("with nothing to send back: %+v, %v; want nil, nil", r, err)
	}
	if r, err := env.Bus.HandOffer(ctx, "agentbus.default.result.wf-refused", statusEvent(t, "wf-refused", 1), bus.Offer{Capability: "echo"}); !errors.Is(err, bus.ErrNotTaken) || r != nil {
		t.Errorf("refused: %+v, %v; want nil, ErrNotTaken", r, err)
	}
	// Hand, without an offer, sends none.
	if err := env.Bus.Hand(ctx, "agentbus.default.result.wf-none", statusEvent(t, "wf-none", 2)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		<-got
	}
	if s := <-got; s.offer != "" || !s.until.IsZero() || s.lease != 0 {
		t.Errorf("Hand sent offer %q until %s, want none", s.offer, s.until)
	}
}
