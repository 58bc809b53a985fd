package watermill_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/internal/stacktest"
	abwm "github.com/agentbus/agentbus/watermill"
)

const deadline = 90 * time.Second

// startStack runs an orchestrator and an echo worker on a new server.
func startStack(t *testing.T) *bustest.Env { return stacktest.Start(t, stacktest.Options{}).Env }

// forwarder is a Watermill router that forwards the tenant's agentbus
// events into a GoChannel Pub/Sub topic.
type forwarder struct {
	router *message.Router
	done   chan struct{}
}

func startForwarder(t *testing.T, env *bustest.Env, out message.Publisher) *forwarder {
	t.Helper()
	sub, err := abwm.NewSubscriber(abwm.SubscriberConfig{Bus: env.Bus, ConsumerGroup: "forward", CloseTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r, err := message.NewRouter(message.RouterConfig{CloseTimeout: 10 * time.Second}, wm.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	r.AddHandler("forward", "default", sub, "agentbus-events", keepOpen{out}, func(m *message.Message) ([]*message.Message, error) {
		return []*message.Message{m.Copy()}, nil
	})
	f := &forwarder{router: r, done: make(chan struct{})}
	go func() { defer close(f.done); _ = r.Run(context.Background()) }()
	select {
	case <-r.Running():
	case <-time.After(deadline):
		t.Fatal("router not running")
	}
	return f
}

// keepOpen keeps the GoChannel open when a router closes its publishers:
// it outlives the router's restart.
type keepOpen struct{ message.Publisher }

func (keepOpen) Close() error { return nil }

func (f *forwarder) stop(t *testing.T) {
	t.Helper()
	if err := f.router.Close(); err != nil {
		t.Fatal(err)
	}
	<-f.done
}

// A Watermill router forwarding a tenant's events into GoChannel gets
// every event of 50 workflows exactly once, in each workflow's order,
// across a restart of the router in the middle: the new router goes on
// after the last event the old one acked.
func TestForwardingRouterAcrossARestart(t *testing.T) {
	env := startStack(t)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	goch := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 10000, Persistent: true}, wm.NopLogger{})
	defer goch.Close()
	received, err := goch.Subscribe(ctx, "agentbus-events")
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewNATS(env.Bus, client.NATSConfig{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	submitAll := func(from, to int) {
		for i := from; i < to; i++ {
			plan := &events.Plan{Steps: []events.PlanStep{{ID: "a", Capability: "echo"}, {ID: "b", Capability: "echo", DependsOn: []string{"a"}}}}
			if _, err := c.Submit(ctx, client.Submission{WorkflowID: fmt.Sprintf("wf-%02d", i), Plan: plan}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// what the stream holds, read straight from it once every workflow ended
	stored := func() map[string][]uint64 {
		out := map[string][]uint64{}
		for i := range n {
			wf := fmt.Sprintf("wf-%02d", i)
			err := env.Bus.Follow(ctx, "default", wf, 0, func(_ context.Context, r bus.Record) error {
				out[wf] = append(out[wf], r.Offset)
				if r.Envelope.Type.Terminal() {
					return bus.ErrStop
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		return out
	}

	seen := map[string]int{}     // message UUID → times received
	got := map[string][]uint64{} // workflow → offsets received, in order
	take := func(until func() bool) {
		for !until() {
			select {
			case m := <-received:
				seen[m.UUID]++
				off, _ := strconv.ParseUint(m.Metadata.Get(abwm.MetaOffset), 10, 64)
				wf := m.Metadata.Get(abwm.MetaWorkflow)
				got[wf] = append(got[wf], off)
				if m.Metadata.Get(abwm.MetaType) == "" || m.Metadata.Get(abwm.MetaTenant) != "default" || !json.Valid(m.Payload) {
					t.Fatalf("message %s metadata %v payload %s", m.UUID, m.Metadata, m.Payload)
				}
				m.Ack()
			case <-ctx.Done():
				t.Fatalf("timed out with %d messages", len(seen))
			}
		}
	}
	f := startForwarder(t, env, goch)
	submitAll(0, n/2)
	take(func() bool { return len(seen) >= 40 })
	f.stop(t)
	submitAll(n/2, n)
	f = startForwarder(t, env, goch)
	defer f.stop(t)
	want := stored()
	total := 0
	for _, offs := range want {
		total += len(offs)
	}
	take(func() bool { return len(seen) >= total })

	for id, k := range seen {
		if k != 1 {
			t.Errorf("message %s received %d times", id, k)
		}
	}
	// GoChannel hands published messages to its subscribers concurrently,
	// so only the set is compared here; the subscriber's own order is
	// TestSubscriberOrderAndNack's.
	for wf, offs := range want {
		g := slices.Sorted(slices.Values(got[wf]))
		if fmt.Sprint(g) != fmt.Sprint(offs) {
			t.Errorf("%s: received %v, stored %v", wf, g, offs)
		}
	}
}

// The subscriber yields the tenant's events in stream order, one at a
// time, and a nacked one again before any later one.
func TestSubscriberOrderAndNack(t *testing.T) {
	env := startStack(t)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	c, err := client.NewNATS(env.Bus, client.NATSConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := c.Submit(ctx, client.Submission{WorkflowID: fmt.Sprintf("o-%d", i), Query: "echo hi"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		if _, err := c.Wait(ctx, fmt.Sprintf("o-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := abwm.NewSubscriber(abwm.SubscriberConfig{Bus: env.Bus, ConsumerGroup: "order", NackDelay: time.Millisecond, CloseTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	msgs, err := sub.Subscribe(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	nacked := false
	ends := 0
	for ends < 5 {
		var m *message.Message
		select {
		case m = <-msgs:
		case <-ctx.Done():
			t.Fatalf("timed out after offset %d", last)
		}
		off, _ := strconv.ParseUint(m.Metadata.Get(abwm.MetaOffset), 10, 64)
		if !nacked && off > 3 {
			nacked = true
			m.Nack() // it must come again, before anything after it
			select {
			case again := <-msgs:
				if again.UUID != m.UUID {
					t.Fatalf("after a nack of %s (offset %d) came %s", m.UUID, off, again.Metadata.Get(abwm.MetaOffset))
				}
				m = again
			case <-ctx.Done():
				t.Fatal("the nacked message never came again")
			}
		}
		if off <= last {
			t.Fatalf("offset %d after %d", off, last)
		}
		last = off
		if m.Metadata.Get(abwm.MetaType) == "complete" {
			ends++
		}
		m.Ack()
	}
	if _, err := abwm.NewSubscriber(abwm.SubscriberConfig{}); !errors.Is(err, abwm.ErrConfig) {
		t.Fatalf("no bus: %v", err)
	}
	if _, err := sub.Subscribe(ctx, "Not A Tenant"); err == nil {
		t.Fatal("a topic that is no tenant was taken")
	}
}
