package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
)

// subInserts is how many subscriptions the server has made since it
// started, in every account.
func subInserts(t *testing.T, s *server.Server) uint64 {
	t.Helper()
	sz, err := s.Subsz(nil)
	if err != nil {
		t.Fatal(err)
	}
	return sz.NumInserts
}

// TestConsumeSubscribesOncePerLoop: a Consume loop keeps one subscription
// for all the messages it pulls. nats.go's Consumer.Next, which it used
// before, subscribes to a new inbox for every message: a write to the
// server's subscription list each time.
func TestConsumeSubscribesOncePerLoop(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.Concurrency = 2
	var got atomic.Int64
	reached := make(chan int64, 2)
	runConsume(t, env.Bus, cfg, func(context.Context, *bus.Delivery) error {
		if n := got.Add(1); n%20 == 0 {
			reached <- n
		}
		return nil
	})
	publishStep(t, env.Bus, "echo", 0)
	for i := 1; i < 20; i++ {
		publishStep(t, env.Bus, "echo", i)
	}
	recv(t, reached, "20 deliveries")
	settled(t, env, cfg.Durable)
	// From here on every subscription the consumer, the loops and the
	// publisher need exists.
	before := subInserts(t, env.Server.Internal())
	for i := 20; i < 40; i++ {
		publishStep(t, env.Bus, "echo", i)
	}
	recv(t, reached, "20 more deliveries")
	settled(t, env, cfg.Durable)
	if made := subInserts(t, env.Server.Internal()) - before; made > 0 {
		t.Errorf("consuming 20 more messages made %d subscriptions, want none", made)
	}
}

// TestConsumeMakesADeletedConsumerAgain: pulls waiting on a consumer that
// is deleted are told so (409 Consumer Deleted); the loop makes it again
// and goes on.
func TestConsumeMakesADeletedConsumerAgain(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.Concurrency = 2
	seen := newDeliveries()
	runConsume(t, env.Bus, cfg, func(_ context.Context, d *bus.Delivery) error {
		seen.add(d)
		return nil
	})
	js := env.Bus.JetStream()
	waiting(t, js, cfg.Durable, 2)
	if err := js.DeleteConsumer(testCtx(t), cfg.Stream, cfg.Durable); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() (bool, string) {
		_, err := js.Consumer(testCtx(t), cfg.Stream, cfg.Durable)
		return err == nil, fmt.Sprintf("consumer not made again: %v", err)
	})
	id := publishStep(t, env.Bus, "echo", 1)
	if d := recv(t, seen.ch, "a delivery from the consumer made again"); d.Envelope.ID != id {
		t.Fatalf("got %s, want %s", d.Envelope.ID, id)
	}
}

// waiting waits until n pull requests wait on the steps consumer durable.
func waiting(t *testing.T, js jetstream.JetStream, durable string, n int) {
	t.Helper()
	eventually(t, func() (bool, string) {
		c, err := js.Consumer(testCtx(t), "AGENTBUS_STEPS", durable)
		if err != nil {
			return false, err.Error()
		}
		info, err := c.Info(testCtx(t))
		if err != nil {
			return false, err.Error()
		}
		return info.NumWaiting == n, fmt.Sprintf("%d pulls waiting, want %d", info.NumWaiting, n)
	})
}

// TestConsumeRetryAfterWaits: a RetryAfter answer (a nak with a delay) is
// redelivered no sooner than its delay, as the same stream message
// delivered a second time.
func TestConsumeRetryAfterWaits(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	const delay = 300 * time.Millisecond
	seen := newDeliveries()
	var first time.Time
	runConsume(t, env.Bus, cfg, func(_ context.Context, d *bus.Delivery) error {
		if d.Delivered == 1 {
			first = time.Now()
			seen.add(d)
			return &bus.RetryAfter{Delay: delay}
		}
		seen.add(d)
		return nil
	})
	publishStep(t, env.Bus, "echo", 1)
	d1 := recv(t, seen.ch, "the first delivery")
	d2 := recv(t, seen.ch, "the redelivery")
	if waited := time.Since(first); waited < delay {
		t.Errorf("redelivered after %s, before the %s asked for", waited, delay)
	}
	if d2.Delivered != 2 || d2.Sequence != d1.Sequence || d1.Sequence == 0 {
		t.Errorf("deliveries #%d seq %d then #%d seq %d, want #1 then #2 of one stream message", d1.Delivered, d1.Sequence, d2.Delivered, d2.Sequence)
	}
	settled(t, env, cfg.Durable)
}

// TestConsumeInProgressHoldsTheMessage: a handler that says it is still
// working keeps its message past AckWait, and nothing redelivers it.
func TestConsumeInProgressHoldsTheMessage(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.AckWait = time.Second
	cfg.Concurrency = 2 // a free loop would take a redelivery
	seen := newDeliveries()
	runConsume(t, env.Bus, cfg, func(ctx context.Context, d *bus.Delivery) error {
		seen.add(d)
		stop := d.KeepInProgress(ctx, 200*time.Millisecond)
		defer stop()
		select {
		case <-time.After(2500 * time.Millisecond): // two and a half AckWaits
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	publishStep(t, env.Bus, "echo", 1)
	recv(t, seen.ch, "the delivery")
	settled(t, env, cfg.Durable)
	if len(seen.ch) != 0 {
		d := <-seen.ch
		t.Fatalf("delivered again (#%d) while its handler said it was working", d.Delivered)
	}
}

// TestConsumeTerminatesWithItsReason: a poison message is terminated with
// the handler's error as the reason the server's advisory gives.
func TestConsumeTerminatesWithItsReason(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	adv := make(chan *nats.Msg, 4)
	sub, err := env.Bus.Conn().ChanSubscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>", adv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	runConsume(t, env.Bus, cfg, func(context.Context, *bus.Delivery) error {
		return fmt.Errorf("%w: no such tool", bus.ErrPoison)
	})
	publishStep(t, env.Bus, "echo", 1)
	m := recv(t, adv, "the termination advisory")
	var a struct {
		Consumer string `json:"consumer"`
		Reason   string `json:"reason"`
	}
	if err := json.Unmarshal(m.Data, &a); err != nil {
		t.Fatal(err)
	}
	if a.Consumer != cfg.Durable || !strings.Contains(a.Reason, "no such tool") {
		t.Errorf("advisory for %q says %q, want %s and the handler's error", a.Consumer, a.Reason, cfg.Durable)
	}
}

// TestPullerOutlivesItsConsumerLeader: a pull waiting on a consumer whose
// leader goes away ends (told so, or its heartbeats stop), and the next
// pull gets the message published after the new leader's election.
func TestPullerOutlivesItsConsumerLeader(t *testing.T) {
	t.Parallel()
	c := bustest.NewCluster(t, 3)
	js := c.Connect(t).JetStream()
	ctx := testCtx(t)
	// A cluster just formed may not place three replicas yet ("no suitable
	// peers for placement"): asked again until it does.
	eventually(t, func() (bool, string) {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PULLS", Subjects: []string{"pulls.>"}, Replicas: 3})
		return err == nil, fmt.Sprintf("create stream: %v", err)
	})
	var cons jetstream.Consumer
	eventually(t, func() (ok bool, what string) {
		var err error
		cons, err = js.CreateOrUpdateConsumer(ctx, "PULLS", jetstream.ConsumerConfig{Durable: "p", AckPolicy: jetstream.AckExplicitPolicy, Replicas: 3})
		return err == nil, fmt.Sprintf("create consumer: %v", err)
	})
	var info *jetstream.ConsumerInfo
	eventually(t, func() (bool, string) {
		var err error
		info, err = cons.Info(ctx)
		return err == nil && info.Cluster != nil && info.Cluster.Leader != "", fmt.Sprintf("consumer has no leader yet (%v)", err)
	})
	leader, other := -1, -1
	for i, n := range c.Nodes {
		if n.Name == info.Cluster.Leader {
			leader = i
		} else if other < 0 {
			other = i
		}
	}
	if leader < 0 {
		t.Fatalf("consumer leader %q is none of the nodes", info.Cluster.Leader)
	}
	nc, err := nats.Connect(c.Nodes[other].URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	const beat = 250 * time.Millisecond
	p, err := bus.NewPullerOn(nc, "PULLS", "p", beat)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)

	errc := make(chan error, 1)
	go func() {
		m, err := p.Next(ctx)
		if err == nil {
			err = fmt.Errorf("got a message (%s) from an empty stream", m.Subject())
		}
		errc <- err
	}()
	eventually(t, func() (bool, string) {
		info, err := cons.Info(ctx)
		return err == nil && info.NumWaiting == 1, fmt.Sprintf("pull not waiting yet (%v)", err)
	})
	start := time.Now()
	c.Stop(leader)
	err = recv(t, errc, "the waiting pull's end")
	if !errors.Is(err, jetstream.ErrNoHeartbeat) && !errors.Is(err, jetstream.ErrConsumerLeadershipChanged) &&
		!errors.Is(err, jetstream.ErrServerShutdown) && !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("the waiting pull ended with %v", err)
	}
	if took := time.Since(start); took > 10*beat+5*time.Second {
		t.Errorf("the waiting pull took %s to end", took)
	}
	t.Logf("the waiting pull ended after %s: %v", time.Since(start), err)

	pub, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, func() (bool, string) {
		_, err := pub.Publish(ctx, "pulls.after", []byte("after"))
		return err == nil, fmt.Sprintf("publish: %v", err)
	})
	for {
		m, err := p.Next(ctx)
		if ctx.Err() != nil {
			t.Fatalf("nothing pulled before the deadline (last: %v)", err)
		}
		if err != nil {
			continue // an election still under way
		}
		if string(m.Data()) != "after" {
			t.Fatalf("pulled %q", m.Data())
		}
		if err := m.Ack(); err != nil {
			t.Fatal(err)
		}
		return
	}
}

// TestPullerForgetsARequestItGaveUp: a request whose heartbeats stopped is
// given up on, and so is the subscription it replies to. A message the
// server still delivers to it before the next pull is taken then; after
// that the server finds no one at the old reply subject, so a late
// delivery cannot wait in this Puller's buffer while its loop runs a
// handler (and out its AckWait). A plain subscriber stands in for a
// consumer leader that takes requests and falls silent, which a real one
// does only when it is cut off.
func TestPullerForgetsARequestItGaveUp(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	nc := env.Bus.Conn()
	ctx := testCtx(t)
	requests := make(chan string, 8)
	silent, err := nc.Subscribe("$JS.API.CONSUMER.MSG.NEXT.SILENT.c", func(m *nats.Msg) { requests <- m.Reply })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Unsubscribe() })
	const beat = 100 * time.Millisecond
	p, err := bus.NewPullerOn(nc, "SILENT", "c", beat)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)

	if _, err := p.Next(ctx); !errors.Is(err, jetstream.ErrNoHeartbeat) {
		t.Fatalf("a pull nobody answers ended with %v, want no heartbeat", err)
	}
	first := recv(t, requests, "the first pull request")
	late := nats.NewMsg(first)
	late.Data = []byte("late")
	if err := nc.PublishMsg(late); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // the late message is in the Puller's buffer once this returns
		t.Fatal(err)
	}
	m, err := p.Next(ctx)
	if err != nil || string(m.Data()) != "late" {
		t.Fatalf("the next pull gave %v, %v; want the message that came late for the first", m, err)
	}

	errc := make(chan error, 1)
	go func() {
		m, err := p.Next(ctx)
		if err == nil {
			err = fmt.Errorf("got %q", m.Data())
		}
		errc <- err
	}()
	recv(t, requests, "the second pull request")
	if _, err := nc.Request(first, []byte("later"), testTimeout); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("a delivery to the first request's reply subject: %v, want no responders (nobody listens there any more)", err)
	}
	if err := recv(t, errc, "the second pull's end"); !errors.Is(err, jetstream.ErrNoHeartbeat) {
		t.Errorf("the second pull ended with %v, want no heartbeat (and not the message sent to the first)", err)
	}
}
