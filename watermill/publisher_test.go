package watermill_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/internal/stacktest"
	abwm "github.com/agentbus/agentbus/watermill"
)

// noteTicket is the README's Publisher example (the Go block marked
// readme-test: watermill-publisher), verbatim: TestREADMEPublisher keeps
// the two the same.
func noteTicket(b *bus.Bus, tenant, workflow string) error {
	pub, err := abwm.NewPublisher(abwm.PublisherConfig{Bus: b})
	if err != nil {
		return err
	}
	defer pub.Close()
	m := message.NewMessage("ticket-ops-12", []byte(`{"ticket":"OPS-12"}`))
	m.Metadata.Set(abwm.MetaWorkflow, workflow)
	m.Metadata.Set("source", "jira")
	return pub.Publish(tenant, m)
}

func TestREADMEPublisher(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme-test: watermill-publisher -->\n```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no go block marked readme-test: watermill-publisher")
	}
	src, err := os.ReadFile("publisher_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?s)\nfunc noteTicket\(.*?\n}\n`).Find(src)
	if fn == nil {
		t.Fatal("publisher_test.go has no func noteTicket")
	}
	if string(m[1]) != string(fn[1:]) {
		t.Errorf("README's watermill-publisher block is not noteTicket as tested:\n%s", fn)
	}
}

// A message published into a waiting workflow is a custom event of that
// workflow: an HTTP follower sees it among the orchestrator's events,
// and a Subscriber gives back its UUID, payload and metadata unchanged.
func TestPublishedMessageJoinsTheWorkflow(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{Gateway: true})
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	c, err := client.New(client.Config{URL: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	p := &events.Plan{Steps: []events.PlanStep{{ID: "a", Capability: "echo", Input: json.RawMessage(`{}`), RequiresApproval: true}}}
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "review", Plan: p}); err != nil {
		t.Fatal(err)
	}
	published := false
	var seen client.Frame
	for f, err := range c.Follow(ctx, "review", 0) {
		if err != nil {
			t.Fatal(err)
		}
		var st events.Status
		if !published && f.Type == "status" && json.Unmarshal(f.Data, &st) == nil && st.State == events.StateInputRequired {
			if err := noteTicket(s.Env.Bus, "default", "review"); err != nil {
				t.Fatal(err)
			}
			published = true
		}
		if f.Type == "custom" {
			seen = f
			if r, err := c.Approve(ctx, "review", "a", "filed"); err != nil || !r.Applied {
				t.Fatalf("approve %+v, %v", r, err)
			}
		}
	}
	if seen.Type != "custom" || seen.StepID != "" {
		t.Fatalf("follower never saw the custom event (last %+v)", seen)
	}
	v, err := client.Payload(seen)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.(events.Custom); string(got.Bytes()) != `{"ticket":"OPS-12"}` || got.Metadata["source"] != "jira" || got.Metadata[abwm.MetaWorkflow] != "" {
		t.Fatalf("custom event data %+v", got)
	}

	sub, err := abwm.NewSubscriber(abwm.SubscriberConfig{Bus: s.Env.Bus, ConsumerGroup: "audit"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	msgs, err := sub.Subscribe(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	for m := range msgs {
		m.Ack()
		if m.Metadata.Get(abwm.MetaType) != "custom" {
			continue
		}
		if m.UUID != "ticket-ops-12" || string(m.Payload) != `{"ticket":"OPS-12"}` || m.Metadata.Get("source") != "jira" ||
			m.Metadata.Get(abwm.MetaWorkflow) != "review" || m.Metadata.Get(abwm.MetaOffset) != strconv.FormatUint(seen.Offset, 10) {
			t.Fatalf("subscriber gave %s %q %v", m.UUID, m.Payload, m.Metadata)
		}
		return
	}
	t.Fatal("subscriber closed before the custom event")
}

// Bad messages are refused with what is wrong and which message, and a
// batch with one bad message stores none; a publish retried with the
// same UUIDs stores each message once.
func TestPublishRefusesBadMessages(t *testing.T) {
	env := bustest.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	pub, err := abwm.NewPublisher(abwm.PublisherConfig{Bus: env.Bus})
	if err != nil {
		t.Fatal(err)
	}
	ok := func(id string) *message.Message {
		m := message.NewMessage(id, []byte("x"))
		m.Metadata.Set(abwm.MetaWorkflow, "wf-1")
		return m
	}
	noWorkflow := message.NewMessage("m-2", []byte("x"))
	badWorkflow := ok("m-3")
	badWorkflow.Metadata.Set(abwm.MetaWorkflow, "a.b")
	badStep := ok("m-4")
	badStep.Metadata.Set(abwm.MetaStep, "*")
	for _, tt := range []struct {
		name, topic string
		msg         *message.Message
		want        string
	}{
		{"no workflow", "default", noWorkflow, `message 1 (uuid "m-2"): no workflow: set metadata "agentbus_workflow"`},
		{"bad workflow", "default", badWorkflow, `message 1 (uuid "m-3"): metadata "agentbus_workflow"`},
		{"bad step", "default", badStep, `message 1 (uuid "m-4"): metadata "agentbus_step"`},
		{"no uuid", "default", ok(""), `message 1 (uuid ""): UUID is empty`},
		{"bad topic", "a.b", ok("m-5"), "topic must be a tenant id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := pub.Publish(tt.topic, ok("m-1"), tt.msg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Publish = %v, want it to say %q", err, tt.want)
			}
			if tt.topic == "default" && !errors.Is(err, abwm.ErrMessage) {
				t.Errorf("%v is not ErrMessage", err)
			}
		})
	}
	if _, last, err := env.Bus.EventsRange(ctx); err != nil || last != 0 {
		t.Fatalf("a refused batch stored events: last offset %d (%v)", last, err)
	}
	for range 2 {
		if err := pub.Publish("default", ok("m-1"), ok("m-6")); err != nil {
			t.Fatal(err)
		}
	}
	if _, last, err := env.Bus.EventsRange(ctx); err != nil || last != 2 {
		t.Fatalf("a retried publish stored %d events, want 2 (%v)", last, err)
	}
	if _, err := abwm.NewPublisher(abwm.PublisherConfig{Workflow: "a.b"}); !errors.Is(err, abwm.ErrConfig) ||
		!strings.Contains(err.Error(), "Bus is required") || !strings.Contains(err.Error(), "Workflow") {
		t.Fatalf("bad config: %v", err)
	}
	_ = pub.Close()
	if err := pub.Publish("default", ok("m-7")); !errors.Is(err, abwm.ErrClosed) {
		t.Fatal("a closed publisher published")
	}
}

// A subscriber closed with a message not yet handed over, or handed
// over and left unfinished past CloseTimeout, gives it back at once: the
// group's next subscriber gets it well within AckWait (30s), first.
func TestClosedSubscriberGivesBackItsMessage(t *testing.T) {
	for _, inFlight := range []int{1, 8} {
		t.Run(fmt.Sprintf("in_flight=%d", inFlight), func(t *testing.T) { closedSubscriberGivesBack(t, inFlight) })
	}
}

func closedSubscriberGivesBack(t *testing.T, inFlight int) {
	env := bustest.New(t)
	pub, err := abwm.NewPublisher(abwm.PublisherConfig{Bus: env.Bus, Workflow: "wf"})
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish("default", message.NewMessage("m-1", []byte("1")), message.NewMessage("m-2", []byte("2"))); err != nil {
		t.Fatal(err)
	}
	next := func(t *testing.T) (*abwm.Subscriber, *message.Message) {
		t.Helper()
		sub, err := abwm.NewSubscriber(abwm.SubscriberConfig{Bus: env.Bus, CloseTimeout: 200 * time.Millisecond, InFlight: inFlight})
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := sub.Subscribe(t.Context(), "default")
		if err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-msgs:
			return sub, m
		case <-time.After(10 * time.Second):
			t.Fatal("no message within 10s; AckWait is 30s")
			return nil, nil
		}
	}
	sub, m := next(t)
	if m.UUID != "m-1" {
		t.Fatalf("first message %s", m.UUID)
	}
	m.Ack()
	_ = sub.Close() // m-2 waits to be handed over
	sub, m = next(t)
	if m.UUID != "m-2" {
		t.Fatalf("after a close with m-2 waiting, got %s", m.UUID)
	}
	_ = sub.Close() // m-2 in hand, never acked
	sub, m = next(t)
	defer sub.Close()
	if m.UUID != "m-2" {
		t.Fatalf("after a close with m-2 in hand, got %s", m.UUID)
	}
	m.Ack()
}
