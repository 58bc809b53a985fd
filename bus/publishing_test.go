package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

// PublishAllAsync sends at once; Wait returns each message's
// acknowledgement in order, the same each time it is called.
func TestPublishAllAsyncStoresInOrder(t *testing.T) {
	env := bustest.New(t)
	subj, err := subjects.Events(tenant, "w1")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []bus.Message
	for n := range 3 {
		e := statusEvent(t, "w1", n+1)
		msgs = append(msgs, bus.Message{Pending: bus.Pending{Subject: subj, MsgID: e.ID, Env: e}})
	}
	before := env.Bus.Ops()
	p := env.Bus.PublishAllAsync(msgs)
	acks, err := p.Wait(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(acks) != 3 || acks[0].Sequence == 0 || acks[1].Sequence != acks[0].Sequence+1 || acks[2].Sequence != acks[1].Sequence+1 {
		t.Fatalf("acks %+v: want three in a row, in order", acks)
	}
	again, err := p.Wait(testCtx(t))
	if err != nil || len(again) != 3 || again[2] != acks[2] {
		t.Fatalf("Wait again: %+v, %v; want %+v", again, err, acks)
	}
	if ops := env.Bus.Ops().Sub(before); ops.Published != 3 || ops.Waits > 1 {
		t.Fatalf("ops %+v: want 3 published and at most one wait", ops)
	}
	// Sent again, they are duplicates: stored once.
	dup, err := env.Bus.PublishAllAsync(msgs).Wait(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range dup {
		if !dup[i].Duplicate || dup[i].Sequence != acks[i].Sequence {
			t.Fatalf("sent again: %+v; want duplicates of %+v", dup, acks)
		}
	}
}

// A batch holding a terminal event is not sent asynchronously: Wait
// publishes it with PublishAll, the terminal event last.
func TestPublishAllAsyncLeavesATerminalEventToPublishAll(t *testing.T) {
	env := bustest.New(t)
	acks, err := env.Bus.PublishAllAsync(terminalFirst(t)).Wait(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	wantTerminalLast(t, acks)
}

// A message no stream takes fails the wait: sent again with PublishAll,
// which waits for a stream (an election) until the context ends.
func TestPublishAllAsyncFailsWhereNoStreamListens(t *testing.T) {
	env := bustest.New(t)
	e := statusEvent(t, "w1", 1)
	ctx, cancel := context.WithTimeout(testCtx(t), time.Second)
	defer cancel()
	if _, err := env.Bus.PublishAllAsync([]bus.Message{{Pending: bus.Pending{Subject: "nowhere.at.all", MsgID: e.ID, Env: e}}}).Wait(ctx); err == nil {
		t.Fatal("stored on a subject no stream captures")
	}
}
