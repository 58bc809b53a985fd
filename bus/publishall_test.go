package bus_test

import (
	"testing"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// PublishAll stores a workflow's terminal event after every other message
// of the batch, whatever their order in it: a terminal event stored first
// (a partial failure, then the caller's retry) would hide the rest from
// followers, who stop at it.
func TestPublishAllStoresTheTerminalEventLast(t *testing.T) {
	env := bustest.New(t)
	acks, err := env.Bus.PublishAll(testCtx(t), terminalFirst(t))
	if err != nil {
		t.Fatal(err)
	}
	wantTerminalLast(t, acks)
}

// terminalFirst is a batch of workflow w1's complete event, then a status
// event.
func terminalFirst(t *testing.T) []bus.Message {
	t.Helper()
	subj, err := subjects.Events(tenant, "w1")
	if err != nil {
		t.Fatal(err)
	}
	complete, err := events.New(events.TypeComplete, events.EventKey(tenant, "w1", 2), events.SourceOrchestrator, tenant, "w1", "", events.Complete{})
	if err != nil {
		t.Fatal(err)
	}
	status := statusEvent(t, "w1", 1)
	return []bus.Message{
		{Pending: bus.Pending{Subject: subj, MsgID: complete.ID, Env: complete}},
		{Pending: bus.Pending{Subject: subj, MsgID: status.ID, Env: status}},
	}
}

// wantTerminalLast fails unless terminalFirst's complete event was stored
// after its status event.
func wantTerminalLast(t *testing.T, acks []bus.Published) {
	t.Helper()
	if acks[0].Sequence <= acks[1].Sequence {
		t.Fatalf("complete stored at %d, the status before it at %d: want the terminal event last", acks[0].Sequence, acks[1].Sequence)
	}
}
