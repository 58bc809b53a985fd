package orchestrator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/events"
)

// An agent outside Go that answers a step with a reply missing required
// fields does not leave the workflow waiting: the step fails, and the
// workflow's error event says which reply and what is missing (pointers).
func TestMalformedReplyFailsItsStep(t *testing.T) {
	// The Go agent holding the step stands by while the "other" agent's
	// reply arrives; it lets go when the test ends, before the stack stops.
	release := make(chan struct{})
	block := newFn("block", func(ctx context.Context, _ agents.Request) (json.RawMessage, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return nil, nil
		}
	})
	s := startStack(t, block)
	t.Cleanup(func() { close(release) })
	submit(t, s.env.Bus, "acme", "raw-reply", events.WorkflowSubmitted{Plan: plan(step("A", "block"), step("B", "echo", "A"))})
	waitFor(t, "step A running", func() bool { return block.calls.Load() == 1 })

	nc, err := nats.Connect(s.env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg("agentbus.acme.reply.raw-reply")
	for k, v := range map[string]string{"ce-specversion": "1.0", "ce-id": "r1", "ce-source": "/python/agent",
		"ce-type": string(events.TypeStepCompleted), "ce-tenantid": "acme", "ce-workflowid": "raw-reply", "ce-stepid": "A"} {
		m.Header.Set(k, v)
	}
	m.Data = []byte(`{"step_id": "A", "capability": "block"}`)
	if _, err := js.PublishMsg(m); err != nil {
		t.Fatal(err)
	}

	rs := collect(t, s.env.Bus, "acme", "raw-reply")
	end := last(t, rs)
	var e events.Error
	if end.Type != events.TypeError || end.Unmarshal(&e) != nil || e.StepID != "A" || e.Code != events.CodeStepFailed {
		t.Fatalf("ended with %s %s, want an error for step A:%s", end.Type, end.Data, describe(rs))
	}
	for _, want := range []string{"malformed reply from /python/agent", "agentbus.acme.reply.raw-reply", "data/attempt", "data/output"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("error %q lacks %q", e.Message, want)
		}
	}
	if len(statuses(rs, "B")) != 0 {
		t.Fatalf("B was dispatched after A's malformed reply:%s", describe(rs))
	}
}
