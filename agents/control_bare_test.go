package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
)

// A workflow of sleep steps — an hour-long one running, one waiting on it —
// is canceled from plain NATS, with no agentbus code on the sender's side:
// a header-less publish (what `nats pub` sends), a header-less request
// (`nats req`), and the full CloudEvent with its ce- headers set by hand.
// The workflow ends canceled, nothing more is dispatched, and the running
// step's context is cancelled: the sleep agent's endpoint counts one step
// that ended (it would otherwise sleep an hour), and not as a failure.
func TestControlSubjectCancelsSleepingWorkflowFromPlainNATS(t *testing.T) {
	const body = `{"action":"cancel","reason":"changed my mind"}`
	forms := []struct {
		name string
		send func(t *testing.T, nc *nats.Conn, subject string)
	}{
		{"bare publish", func(t *testing.T, nc *nats.Conn, subject string) {
			if err := nc.Publish(subject, []byte(body)); err != nil {
				t.Fatal(err)
			}
		}},
		{"bare request", func(t *testing.T, nc *nats.Conn, subject string) {
			m, err := nc.Request(subject, []byte(body), deadline)
			if err != nil {
				t.Fatal(err)
			}
			var res events.ControlResult
			if err := json.Unmarshal(m.Data, &res); err != nil || !res.Applied || res.Status != events.StateCanceled {
				t.Fatalf("answer %s (%v), want the cancel applied", m.Data, err)
			}
		}},
		{"full CloudEvent", func(t *testing.T, nc *nats.Conn, subject string) {
			m := nats.NewMsg(subject)
			for k, v := range map[string]string{"ce-specversion": "1.0", "ce-id": "cancel-1", "ce-source": "/python/client",
				"ce-type": string(events.TypeControl), "ce-tenantid": "acme", "ce-workflowid": "naps",
				"Content-Type": "application/json"} {
				m.Header.Set(k, v)
			}
			m.Data = []byte(body)
			if err := nc.PublishMsg(m); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			env := bustest.New(t)
			startOrchestrator(t, env.Bus)
			startWorker(t, agents.WorkerConfig{Bus: env.Bus, Name: "sleeper", Agents: []agents.Agent{sleep.Agent{}}})
			submit(t, env.Bus, "acme", "naps", events.WorkflowSubmitted{Query: "naps", Plan: plan(
				step("A", sleep.Capability, sleep.Input{MS: time.Hour.Milliseconds()}),
				step("B", sleep.Capability, sleep.Input{MS: 1}, "A"),
			)})
			waitProgress(t, env.Bus, "acme", "naps", "A")

			nc, err := nats.Connect(env.URL)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			f.send(t, nc, "agentbus.acme.control.naps")

			rs := collect(t, env.Bus, "acme", "naps")
			end := rs[len(rs)-1].Envelope
			if end.Type != events.TypeCancelled || !strings.Contains(string(end.Data), "changed my mind") {
				t.Fatalf("ended with %s %s, want cancelled with the reason:%s", end.Type.Short(), end.Data, describe(rs))
			}
			for _, r := range rs {
				if r.Envelope.StepID == "B" {
					t.Fatalf("B was dispatched after the cancel:%s", describe(rs))
				}
			}
			waitFor(t, deadline, "the running sleep step to end", func() (bool, string) {
				ep := microStats(t, nc, "agentbus-sleep")[sleep.Capability]
				return ep.NumRequests == 1 && ep.NumErrors == 0, fmt.Sprintf("%+v", ep)
			})
		})
	}
}

// waitProgress waits for the first progress event of a step: the step is
// running.
func waitProgress(t *testing.T, b *bus.Bus, tenant, workflow, step string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	err := b.Follow(ctx, tenant, workflow, 0, func(_ context.Context, r bus.Record) error {
		if r.Envelope.Type == events.TypeProgress && r.Envelope.StepID == step {
			return bus.ErrStop
		}
		if r.Envelope.Type.Terminal() {
			return fmt.Errorf("workflow ended with %s before step %s ran", r.Envelope.Type.Short(), step)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("waiting for step %s to run: %v", step, err)
	}
}
