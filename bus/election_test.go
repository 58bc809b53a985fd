package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// A publish that finds no stream answering (as while a stream elects a
// leader after a node loss) is sent again with its dedup id until one
// answers: the caller sees a stored message, not "no response from
// stream", and the message is stored once. Publish and PublishAll alike.
func TestPublishWaitsOutAStreamWithoutLeader(t *testing.T) {
	t.Parallel()
	for _, all := range []bool{false, true} {
		name := map[bool]string{false: "Publish", true: "PublishAll"}[all]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := bustest.New(t)
			ctx := testCtx(t)
			if err := env.Bus.JetStream().DeleteStream(ctx, subjects.StreamEvents); err != nil {
				t.Fatal(err)
			}
			back := make(chan error, 1)
			time.AfterFunc(700*time.Millisecond, func() { back <- env.Bus.Provision(ctx, bus.StreamsConfig{}) })
			subj, _ := subjects.Events(tenant, "w1")
			ev := statusEvent(t, "w1", 1)
			key := events.EventKey(tenant, "w1", 1)
			start := time.Now()
			var err error
			if all {
				_, err = env.Bus.PublishAll(ctx, []bus.Message{{Pending: bus.Pending{Subject: subj, Env: ev, MsgID: key}}})
			} else {
				_, err = env.Bus.Publish(ctx, subj, ev, key)
			}
			if err != nil {
				t.Fatalf("publish across the outage: %v", err)
			}
			if err := recv(t, back, "the stream back"); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took < 600*time.Millisecond {
				t.Errorf("stored after %s: before the stream was back?", took)
			}
			if n := streamMsgs(t, env, subjects.StreamEvents); n != 1 {
				t.Errorf("%d messages stored, want 1", n)
			}
		})
	}
}

// Past the caller's deadline the publish gives up with an error that
// bus.Transient recognises (a gateway answers it 503 with Retry-After); a
// refusal that is no election is not retried and not Transient.
func TestPublishGivesUpAtTheDeadline(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	ctx := testCtx(t)
	if err := env.Bus.JetStream().DeleteStream(ctx, subjects.StreamEvents); err != nil {
		t.Fatal(err)
	}
	subj, _ := subjects.Events(tenant, "w1")
	dctx, cancel := context.WithTimeout(ctx, 600*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := env.Bus.Publish(dctx, subj, statusEvent(t, "w1", 1), events.EventKey(tenant, "w1", 1))
	took := time.Since(start)
	if err == nil || !bus.Transient(err) {
		t.Fatalf("publish with no stream = %v, want a transient error", err)
	}
	if took < 500*time.Millisecond || took > 3*time.Second {
		t.Errorf("gave up after %s, want about the 600ms deadline", took)
	}
	if bus.Transient(errors.New("nats: maximum payload exceeded")) || bus.Transient(nil) {
		t.Error("a refusal reads as transient")
	}
}
