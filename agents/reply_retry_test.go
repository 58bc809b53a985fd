package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// noticeHandler signals once a log record whose message starts with
// prefix is written, and passes every record on.
type noticeHandler struct {
	slog.Handler
	prefix string
	seen   chan struct{}
}

func (h noticeHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.prefix) {
		select {
		case h.seen <- struct{}{}:
		default:
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h noticeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.Handler = h.Handler.WithAttrs(as)
	return h
}

func (h noticeHandler) WithGroup(name string) slog.Handler {
	h.Handler = h.Handler.WithGroup(name)
	return h
}

// A reply the replies stream cannot store (here: the stream is gone, as
// while it elects a leader after a node loss) is tried again while the
// step is held, not given up to a redelivery: once the stream is back the
// reply is stored and the step acked, on its first delivery, its agent
// run once. Before, every delivery during the outage was spent, and a
// step was dead-lettered after MaxDeliver although its agent had answered.
func TestReplyWaitsOutTheRepliesStream(t *testing.T) {
	env := bustest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	js := env.Bus.JetStream()
	if err := js.DeleteStream(ctx, subjects.StreamReplies); err != nil {
		t.Fatal(err)
	}
	var calls counter
	a := newAgent("answer", func(_ context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
		calls.add(req.StepID)
		return okOutput, nil
	})
	seen := make(chan struct{}, 1)
	log := slog.New(noticeHandler{Handler: slog.NewTextHandler(io.Discard, nil), prefix: "step reply not stored", seen: seen})
	startWorker(t, agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{a}, AckWait: time.Second, MaxDeliver: 2, Logger: log})

	requestAnswer(ctx, t, env.Bus, "s")
	select {
	case <-seen:
	case <-ctx.Done():
		t.Fatal("the worker never tried to store its reply")
	}
	// Held past AckWait and MaxDeliver's worth of deliveries (the log
	// says so again with each try, about once a second), then back.
	for range 3 {
		select {
		case <-seen:
		case <-ctx.Done():
			t.Fatal("the worker stopped trying to store its reply")
		}
	}
	if err := env.Bus.Provision(ctx, bus.StreamsConfig{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, deadline, "the reply stored", func() (bool, string) {
		n := streamMsgs(t, env.Bus, subjects.StreamReplies)
		return n == 1, fmt.Sprintf("%d replies", n)
	})
	waitStreamEmpty(t, env.Bus, subjects.StreamSteps)
	m, err := js.Stream(ctx, subjects.StreamReplies)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := m.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := events.Decode(raw.Header, raw.Data)
	if err != nil || reply.Type != events.TypeStepCompleted {
		t.Fatalf("reply %s (%v)", reply.Type, err)
	}
	if n := calls.snapshot()["s"]; n != 1 {
		t.Fatalf("the agent ran %d times, want once", n)
	}
}
