package bus_test

import (
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// BenchmarkPublish measures bus.Publish (CloudEvents encoding, validation,
// Nats-Msg-Id dedup, waiting for the stream's ack) of a small status event.
func BenchmarkPublish(b *testing.B) {
	env := bustest.New(b)
	subj, err := subjects.Events(tenant, "w1")
	if err != nil {
		b.Fatal(err)
	}
	ev := statusEvent(b, "w1", 1)
	ctx := testCtx(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := env.Bus.Publish(ctx, subj, ev, "bench/"+strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawJetStreamPublish is the baseline for BenchmarkPublish: the same
// bytes published with nats.go alone on the same kind of embedded server.
func BenchmarkRawJetStreamPublish(b *testing.B) {
	env := bustest.New(b)
	subj, err := subjects.Events(tenant, "w1")
	if err != nil {
		b.Fatal(err)
	}
	enc, err := events.Encode(statusEvent(b, "w1", 1))
	if err != nil {
		b.Fatal(err)
	}
	js := env.Bus.JetStream()
	ctx := testCtx(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		m := &nats.Msg{Subject: subj, Header: nats.Header(enc.Header), Data: enc.Data}
		if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID("bench/"+strconv.Itoa(i))); err != nil {
			b.Fatal(err)
		}
	}
}
