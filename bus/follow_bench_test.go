package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// BenchmarkFollowReplay replays one workflow's 100,000 stored events (a
// thousand of another workflow's interleaved every thousand) three ways
// in one run: Follow (no consumer: batched direct gets), Follow through
// an ordered consumer (a stream that does not republish), and a raw
// nats.go ordered consumer that decodes nothing — the baseline.
func BenchmarkFollowReplay(b *testing.B) {
	const n = 100_000
	env := bustest.New(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	subj, _ := subjects.Events(tenant, "replay")
	other, _ := subjects.Events(tenant, "other")
	for i := 0; i < n; i += 1000 {
		batch := make([]bus.Pending, 0, 1001)
		for j := i; j < i+1000; j++ {
			id := events.EventKey(tenant, "replay", j)
			e, err := events.New(events.TypeProgress, id, events.SourceOrchestrator, tenant, "replay", "",
				events.Progress{CompletedSteps: j, TotalSteps: n, Percent: float64(j) / n * 100, Message: "step done"})
			if err != nil {
				b.Fatal(err)
			}
			batch = append(batch, bus.Pending{Subject: subj, Env: e, MsgID: id})
		}
		e := statusEvent(b, "other", i)
		batch = append(batch, bus.Pending{Subject: other, Env: e, MsgID: e.ID})
		if err := env.Bus.PublishBatch(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	follow := func(f func(context.Context, string, string, uint64, bus.FollowFunc) error) func() (int, error) {
		return func() (int, error) {
			got := 0
			err := f(ctx, tenant, "replay", 0, func(_ context.Context, r bus.Record) error {
				if got++; got == n {
					return bus.ErrStop
				}
				return nil
			})
			return got, err
		}
	}
	ways := []struct {
		name string
		run  func() (int, error)
	}{
		{"live", follow(env.Bus.Follow)},
		{"consumer", follow(env.Bus.FollowWithConsumer)},
		{"raw", func() (int, error) {
			cons, err := env.Bus.JetStream().OrderedConsumer(ctx, subjects.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}})
			if err != nil {
				return 0, err
			}
			it, err := cons.Messages()
			if err != nil {
				return 0, err
			}
			defer it.Stop()
			got := 0
			for got < n {
				if _, err := it.Next(); err != nil {
					return got, err
				}
				got++
			}
			return got, nil
		}},
	}
	took := make([]time.Duration, len(ways))
	for b.Loop() {
		for i, w := range ways {
			start := time.Now()
			got, err := w.run()
			if err != nil || got != n {
				b.Fatalf("%s: %d events, %v", w.name, got, err)
			}
			took[i] += time.Since(start)
		}
	}
	for i, w := range ways {
		b.ReportMetric(float64(n*b.N)/took[i].Seconds(), w.name+"-events/s")
		if w.name != "raw" {
			b.ReportMetric(took[len(ways)-1].Seconds()/took[i].Seconds(), fmt.Sprintf("%s/raw", w.name))
		}
	}
}
