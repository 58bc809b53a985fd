package watermill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

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
// continuously, in the same run. Reported: events/s; "interleaved" runs
// the three in turn every round and reports their ratios to raw.
//
//	go test -run '^$' -bench BenchmarkSubscriber -benchtime 10x ./watermill
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
	i := 0 // every pass a new consumer group, so that it reads from the start
	// readSub reads every event through a new subscriber, acking each as
	// it comes.
	readSub := func(b *testing.B, inFlight int) time.Duration {
		start := time.Now()
		i++
		sub, err := abwm.NewSubscriber(abwm.SubscriberConfig{Bus: env.Bus, ConsumerGroup: fmt.Sprintf("bench-%d", i), InFlight: inFlight})
		if err != nil {
			b.Fatal(err)
		}
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
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
		return time.Since(start)
	}
	nc, err := nats.Connect(env.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	filter, _ := subjects.TenantEvents("default")
	// readRaw reads (and decodes) every event with a raw ordered consumer.
	readRaw := func(b *testing.B) time.Duration {
		start := time.Now()
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
		return time.Since(start)
	}
	rate := func(d time.Duration, n int) float64 { return float64(benchEvents*n) / d.Seconds() }
	b.Run("watermill-subscriber", func(b *testing.B) {
		var d time.Duration
		for b.Loop() {
			d += readSub(b, 1)
		}
		b.ReportMetric(rate(d, b.N), "events/s")
	})
	// The windowed mode: up to 256 events handed over and not yet acked.
	b.Run("watermill-subscriber-inflight=256", func(b *testing.B) {
		var d time.Duration
		for b.Loop() {
			d += readSub(b, 256)
		}
		b.ReportMetric(rate(d, b.N), "events/s")
	})
	b.Run("raw-ordered-consumer", func(b *testing.B) {
		var d time.Duration
		for b.Loop() {
			d += readRaw(b)
		}
		b.ReportMetric(rate(d, b.N), "events/s")
	})
	// The three in turn within every round, so that a machine whose load
	// shifts (a shared one) weighs on all three alike: the ratios to
	// the raw consumer are the figures to compare.
	b.Run("interleaved", func(b *testing.B) {
		var one, win, raw time.Duration
		for b.Loop() {
			raw += readRaw(b)
			one += readSub(b, 1)
			win += readSub(b, 256)
		}
		b.ReportMetric(rate(raw, b.N), "raw_events/s")
		b.ReportMetric(rate(one, b.N), "default_events/s")
		b.ReportMetric(rate(win, b.N), "inflight256_events/s")
		b.ReportMetric(raw.Seconds()/one.Seconds(), "default/raw")
		b.ReportMetric(raw.Seconds()/win.Seconds(), "inflight256/raw")
	})
}
