package orchestrator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/events"
)

// A publish on the control subject with no headers at all — what
// `nats pub agentbus.<t>.control.<wf> '{"action":"cancel",…}'` sends —
// cancels the workflow: the subject names tenant and workflow.
func TestBarePublishOnTheControlSubjectCancels(t *testing.T) {
	observed := make(chan error, 1)
	block := newFn("block", func(ctx context.Context, _ agents.Request) (json.RawMessage, error) {
		<-ctx.Done()
		observed <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	s := startStack(t, block)
	submit(t, s.env.Bus, "acme", "bare-cancel", events.WorkflowSubmitted{Plan: plan(step("A", "block"), step("B", "echo", "A"))})
	waitFor(t, "step A running", func() bool { return block.calls.Load() == 1 })

	nc, err := nats.Connect(s.env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Publish("agentbus.acme.control.bare-cancel", []byte(`{"action":"cancel","reason":"changed my mind"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-observed:
	case <-time.After(10 * time.Second):
		t.Fatal("the running step's context was not cancelled by a bare publish")
	}
	rs := collect(t, s.env.Bus, "acme", "bare-cancel")
	if end := last(t, rs); end.Type != events.TypeCancelled || !strings.Contains(string(end.Data), "changed my mind") {
		t.Fatalf("ended with %s %s, want cancelled with the reason", end.Type, end.Data)
	}
	if len(statuses(rs, "B")) != 0 {
		t.Fatalf("B was dispatched after the cancel")
	}
}

// A bare request gets the result; one that cannot be understood gets what
// was wrong, at a JSON pointer.
func TestBareControlRequestsAreAnswered(t *testing.T) {
	s := startStack(t)
	submit(t, s.env.Bus, "acme", "bare-req", events.WorkflowSubmitted{Plan: plan(step("A", "echo"))})
	collect(t, s.env.Bus, "acme", "bare-req")
	nc, err := nats.Connect(s.env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cases := []struct {
		name, subject, body string
		pointer, says       string
	}{
		{"unknown action", "agentbus.acme.control.bare-req", `{"action":"cancle"}`, "/action", `unknown action "cancle"`},
		{"no action", "agentbus.acme.control.bare-req", `{"reason":"why"}`, "/action", "required"},
		{"not JSON", "agentbus.acme.control.bare-req", `cancel please`, "", "JSON"},
		{"unknown workflow", "agentbus.acme.control.nope", `{"action":"cancel"}`, "", "no such workflow"},
		{"finished workflow", "agentbus.acme.control.bare-req", `{"action":"cancel"}`, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := nc.Request(c.subject, []byte(c.body), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var ans struct {
				events.ControlAnswer
				events.ControlResult
			}
			if err := json.Unmarshal(m.Data, &ans); err != nil {
				t.Fatalf("answer %s: %v", m.Data, err)
			}
			if c.says == "" { // understood, and answered with the result
				if ans.Error != "" || ans.WorkflowID != "bare-req" || ans.Applied || ans.Status != events.StateCompleted {
					t.Fatalf("answer %s, want a result: not applied to the completed workflow", m.Data)
				}
				return
			}
			if !strings.Contains(ans.Error, c.says) {
				t.Fatalf("answer %s, want an error saying %q", m.Data, c.says)
			}
			if c.pointer != "" && (len(ans.Problems) == 0 || ans.Problems[0].Pointer != c.pointer) {
				t.Fatalf("answer %s, want a problem at %s", m.Data, c.pointer)
			}
		})
	}
}
