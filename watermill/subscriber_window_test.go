package watermill_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
	abwm "github.com/agentbus/agentbus/watermill"
)

// The windowed mode (InFlight 16) hands events over in stream order
// without waiting for acks, takes acks in any order, holds at most
// InFlight unacked, and gives a nacked event again, after those already
// handed over; once every event is acked, the group's consumer has
// nothing left to send or to wait for.
func TestWindowedSubscriberOrder(t *testing.T) {
	const n, window = 300, 16
	env := bustest.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	publishNumbered(t, env, "win", n)
	sub, err := abwm.NewSubscriber(abwm.SubscriberConfig{Bus: env.Bus, ConsumerGroup: "win", InFlight: window,
		NackDelay: time.Millisecond, CloseTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	msgs, err := sub.Subscribe(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	cons, err := env.Bus.JetStream().Consumer(ctx, subjects.StreamEvents, sub.Durable("default"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cons.CachedInfo().Config.MaxAckPending; got != window {
		t.Fatalf("MaxAckPending %d, want %d", got, window)
	}
	next := func() *message.Message {
		t.Helper()
		select {
		case m := <-msgs:
			return m
		case <-ctx.Done():
			t.Fatal("timed out")
			return nil
		}
	}
	seen := map[string]int{}
	var firsts []uint64 // offsets of first deliveries, in the order they came
	var held []*message.Message
	nacked := ""
	for len(seen) < n {
		m := next()
		off, _ := strconv.ParseUint(m.Metadata.Get(abwm.MetaOffset), 10, 64)
		if seen[m.UUID]++; seen[m.UUID] == 1 {
			firsts = append(firsts, off)
		} else if m.UUID != nacked {
			t.Fatalf("%s (offset %d) came twice, never nacked", m.UUID, off)
		}
		if nacked == "" && len(seen) == n/2 {
			nacked = m.UUID
			m.Nack()
			continue
		}
		// Acks in reverse order, a window's worth at a time.
		if held = append(held, m); len(held) == window/2 {
			for _, h := range slices.Backward(held) {
				h.Ack()
			}
			held = held[:0]
		}
	}
	if seen[nacked] != 2 {
		for seen[nacked] < 2 {
			m := next()
			if m.UUID != nacked {
				t.Fatalf("%s came again; only %s was nacked", m.UUID, nacked)
			}
			seen[nacked]++
			held = append(held, m)
		}
	}
	for _, h := range held {
		h.Ack()
	}
	if !slices.IsSorted(firsts) || len(firsts) != n {
		t.Fatalf("first deliveries out of stream order: %v", firsts)
	}
	// Every ack reached the consumer: nothing pending, nothing unacked.
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumPending == 0 && info.NumAckPending == 0 && info.NumRedelivered == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("consumer: %d pending, %d unacked, %d redelivered", info.NumPending, info.NumAckPending, info.NumRedelivered)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestSubscriberInFlightValidated(t *testing.T) {
	env := bustest.New(t)
	for _, v := range []int{-1, 10_001} {
		if _, err := abwm.NewSubscriber(abwm.SubscriberConfig{Bus: env.Bus, InFlight: v}); err == nil {
			t.Errorf("InFlight %d accepted", v)
		}
	}
}

// A windowed subscriber closed with its window full strands nothing: every
// event the group's consumer had sent it, handed over or still on its way,
// is nacked at Close, so the group's next subscriber gets it at once
// rather than after AckWait (five minutes here, far past each step's
// deadline). Six subscribers in turn each take a few events and close with
// the rest of their window unread; the last one takes what is left, and
// the group gets every event. (A nacked event stays among the consumer's
// unacked ones until it is sent again, so the consumer's counts cannot
// tell a nacked event from a stranded one: only its coming again can.)
func TestWindowedSubscriberCloseStrandsNothing(t *testing.T) {
	const n, window = 1500, 256
	env := bustest.New(t)
	publishNumbered(t, env, "close", n)
	cfg := abwm.SubscriberConfig{Bus: env.Bus, ConsumerGroup: "close", InFlight: window, AckWait: 5 * time.Minute,
		NackDelay: time.Millisecond, CloseTimeout: 100 * time.Millisecond}
	acked := map[string]bool{}
	// take acks k events, each one not yet acked, within 60 s.
	take := func(sub *abwm.Subscriber, k int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		msgs, err := sub.Subscribe(ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		for range k {
			select {
			case m := <-msgs:
				if acked[m.UUID] {
					t.Fatalf("%s came again after it was acked", m.UUID)
				}
				acked[m.UUID] = true
				m.Ack()
			case <-ctx.Done():
				t.Fatalf("%d of %d events acked; the rest did not come within a minute: left to AckWait", len(acked), n)
			}
		}
	}
	for round := range 6 {
		sub, err := abwm.NewSubscriber(cfg)
		if err != nil {
			t.Fatal(err)
		}
		take(sub, 40+round*37)
		// Its window holds events sent and not yet handed over.
		if err := sub.Close(); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := abwm.NewSubscriber(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	take(sub, n-len(acked))
}

// publishNumbered adds n custom events to workflow wf of tenant default,
// message i with UUID m-%04d and payload i.
func publishNumbered(t *testing.T, env *bustest.Env, wf string, n int) {
	t.Helper()
	pub, err := abwm.NewPublisher(abwm.PublisherConfig{Bus: env.Bus, Workflow: wf})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := pub.Publish("default", message.NewMessage(fmt.Sprintf("m-%04d", i), []byte(strconv.Itoa(i)))); err != nil {
			t.Fatal(err)
		}
	}
}
