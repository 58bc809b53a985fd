package orchestrator_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// TestNATSIdempotencyKey: a bare NATS submitter's idempotency key makes a
// second submission of the same request under another workflow id a
// duplicate that is never started, and one of a different request a
// workflow refused with an error naming the key.
func TestNATSIdempotencyKey(t *testing.T) {
	s := startStack(t)
	nc, err := nats.Connect(s.env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	publish := func(wf, query string) {
		t.Helper()
		env, err := events.New(events.TypeWorkflowSubmitted, events.SubmitKey("default", wf), "/bare", "default", wf, "",
			events.WorkflowSubmitted{Query: query, Plan: plan(step("e", "echo"))})
		if err != nil {
			t.Fatal(err)
		}
		m, err := events.Encode(env)
		if err != nil {
			t.Fatal(err)
		}
		subj, _ := subjects.Submit("default")
		msg := &nats.Msg{Subject: subj, Header: nats.Header(m.Header), Data: m.Data}
		msg.Header.Set(api.NATSIdempotencyHeader, "order-42")
		if err := nc.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	publish("first", "the same")
	if end := last(t, collect(t, s.env.Bus, "default", "first")); end.Type != events.TypeComplete {
		t.Fatalf("first ended %s", end.Type)
	}
	publish("second", "the same")
	publish("third", "another")
	end := last(t, collect(t, s.env.Bus, "default", "third"))
	var e events.Error
	if end.Type != events.TypeError || end.Unmarshal(&e) != nil || e.Pointer != "/header/"+api.NATSIdempotencyHeader {
		t.Fatalf("third ended %s %+v", end.Type, e)
	}
	drained(t, s.env, subjects.StreamWorkflows) // the second was handled, and started nothing
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.orch.Checkpoint(ctx, "default", "second"); err == nil {
		t.Error("the duplicate submission started a workflow")
	}
}
