package watermill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	abwm "github.com/agentbus/agentbus/watermill"
)

const benchEvents = 2000

// BenchmarkSubscriber: reading a tenant's 2,000 stored events through
// the Watermill subscriber (each acked as it comes: in the default mode
// the next comes after the ack, in the windowed mode, InFlight 256, up to
// 256 are out unacked) against a raw JetStream ordered consumer pulling
// continuously, in the same run. Reported: events/s.
func BenchmarkSubscriber(b *testing.B) {
	env := bustest.New(b)
	ctx := context.Background()
	subj, _ := subjects.Events("default", "bench")
	for n := range benchEvents {
		msgID := events.EventKey("default", "bench", n)
		e, err := events.New(events.TypeProgress, msgID, events.SourceOrchestrator, "default", "bench", "s",
			events.Progress{CompletedSteps: n, TotalSteps: benchEvents, Percent: 50, Message: "step s is half done"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := env.Bus.Publish(ctx, subj, e, msgID); err != nil {
			b.Fatal(err)
		}
	}
	i := 0 // every run a new consumer group, so that it reads from the start
	subscriber := func(b *testing.B, inFlight int) {
		for b.Loop() {
			i++
			sub, err := abwm.NewSubscriber(abwm.SubscriberConfig{Bus: env.Bus, ConsumerGroup: fmt.Sprintf("bench-%d", i), InFlight: inFlight})
			if err != nil {
				b.Fatal(err)
			}
			sctx, cancel := context.WithCancel(ctx)
			msgs, err := sub.Subscribe(sctx, "default")
			if err != nil {
				b.Fatal(err)
			}
			for range benchEvents {
				m := <-msgs
				if !json.Valid(m.Payload) {
					b.Fatal("bad payload")
				}
				m.Ack()
			}
			cancel()
			_ = sub.Close()
		}
		b.ReportMetric(float64(benchEvents*b.N)/b.Elapsed().Seconds(), "events/s")
	}
	b.Run("watermill-subscriber", func(b *testing.B) { subscriber(b, 1) })
	// The windowed mode: up to 256 events handed over and not yet acked.
	b.Run("watermill-subscriber-inflight=256", func(b *testing.B) { subscriber(b, 256) })
	b.Run("raw-ordered-consumer", func(b *testing.B) {
		nc, err := nats.Connect(env.URL)
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		filter, _ := subjects.TenantEvents("default")
		for b.Loop() {
			oc, err := js.OrderedConsumer(ctx, subjects.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
			if err != nil {
				b.Fatal(err)
			}
			it, err := oc.Messages()
			if err != nil {
				b.Fatal(err)
			}
			for range benchEvents {
				m, err := it.Next()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := events.Decode(m.Headers(), m.Data()); err != nil {
					b.Fatal(err)
				}
			}
			it.Stop()
		}
		b.ReportMetric(float64(benchEvents*b.N)/b.Elapsed().Seconds(), "events/s")
	})
}
