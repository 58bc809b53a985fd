package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

// benchEvents is how many events the followed workflow holds.
const benchEvents = 2000

// BenchmarkFollow: reading one workflow's 2,000 stored events to its
// end, through the SDK over HTTP (gateway SSE), through the SDK over NATS
// (bus.Follow), and with a raw JetStream ordered consumer as the
// baseline, in the same run. Reported: events/s.
func BenchmarkFollow(b *testing.B) {
	env := bustest.New(b)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	g, err := gateway.New(ctx, gateway.Config{Bus: env.Bus, Addr: "127.0.0.1:0", Logger: bustest.Logger(b)})
	if err != nil {
		b.Fatal(err)
	}
	addr, err := g.Listen()
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })

	const wf = "bench"
	key, _ := subjects.CheckpointKey(gateway.DefaultTenant, wf)
	kv, err := env.Bus.KV(ctx, subjects.BucketCheckpoints)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := kv.Put(ctx, key, []byte(`{"tenant_id":"default","workflow_id":"bench","status":"completed"}`)); err != nil {
		b.Fatal(err)
	}
	subj, _ := subjects.Events(gateway.DefaultTenant, wf)
	for n := range benchEvents {
		msgID := events.EventKey(gateway.DefaultTenant, wf, n)
		var e events.Envelope
		if n == benchEvents-1 {
			e, err = events.New(events.TypeComplete, msgID, events.SourceOrchestrator, gateway.DefaultTenant, wf, "",
				events.Complete{Result: json.RawMessage(`"done"`), Outputs: map[string]json.RawMessage{}})
		} else {
			e, err = events.New(events.TypeProgress, msgID, events.SourceOrchestrator, gateway.DefaultTenant, wf, "s",
				events.Progress{CompletedSteps: n, TotalSteps: benchEvents, Percent: 50, Message: "step s is half done"})
		}
		if err != nil {
			b.Fatal(err)
		}
		if _, err := env.Bus.Publish(ctx, subj, e, msgID); err != nil {
			b.Fatal(err)
		}
	}
	httpc, err := client.New(client.Config{URL: "http://" + addr.String()})
	if err != nil {
		b.Fatal(err)
	}
	natsc, err := client.NewNATS(env.Bus, client.NATSConfig{})
	if err != nil {
		b.Fatal(err)
	}
	viaSDK := func(c *client.Client) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				n := 0
				for _, err := range c.Follow(ctx, wf, 0) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != benchEvents {
					b.Fatalf("followed %d events, want %d", n, benchEvents)
				}
			}
			b.ReportMetric(float64(benchEvents*b.N)/b.Elapsed().Seconds(), "events/s")
		}
	}
	b.Run("sdk-http", viaSDK(httpc))
	b.Run("sdk-nats", viaSDK(natsc))
	b.Run("raw-ordered-consumer", func(b *testing.B) {
		nc, err := nats.Connect(env.URL)
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		for b.Loop() {
			oc, err := js.OrderedConsumer(ctx, subjects.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}})
			if err != nil {
				b.Fatal(err)
			}
			// a continuous pull, as bus.Follow does (Next alone fetches one
			// message per round trip)
			it, err := oc.Messages()
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for n < benchEvents {
				m, err := it.Next()
				if err != nil {
					b.Fatal(fmt.Errorf("after %d: %w", n, err))
				}
				if _, err := events.Decode(m.Headers(), m.Data()); err != nil {
					b.Fatal(err)
				}
				n++
			}
			it.Stop()
		}
		b.ReportMetric(float64(benchEvents*b.N)/b.Elapsed().Seconds(), "events/s")
	})
}
