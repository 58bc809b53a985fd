package bus_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
)

// A progress event an agent outside Go published without its required
// fields is not delivered to clients, and the log says which event (subject,
// offset, type, source) and what is missing (pointer) — never a silent skip.
func TestFollowLogsAMalformedEventItSkips(t *testing.T) {
	env := bustest.New(t)
	var logs syncBuffer
	b, err := bus.Connect(testCtx(t), bus.Config{URL: env.URL, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	nc, err := nats.Connect(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	m := nats.NewMsg("agentbus.acme.events.wf-raw")
	for k, v := range map[string]string{"ce-specversion": "1.0", "ce-id": "p1", "ce-source": "/python/agent",
		"ce-type": "io.agentbus.workflow.progress.v1", "ce-tenantid": "acme", "ce-workflowid": "wf-raw"} {
		m.Header.Set(k, v)
	}
	m.Data = []byte(`{"percent": 50, "message": "half way"}`)
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	bad, err := js.PublishMsg(m)
	if err != nil {
		t.Fatal(err)
	}
	good := publishEvent(t, env.Bus, "wf-raw", 1)

	var got []uint64
	err = b.Follow(testCtx(t), tenant, "wf-raw", 0, func(_ context.Context, r bus.Record) error {
		got = append(got, r.Offset)
		if r.Offset == good {
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != good {
		t.Fatalf("followed offsets %v, want only the well-formed event %d", got, good)
	}
	out := logs.String()
	for _, want := range []string{"event not delivered to clients", "subject=agentbus.acme.events.wf-raw", fmt.Sprintf("offset=%d", bad.Sequence),
		"type=io.agentbus.workflow.progress.v1", "source=/python/agent", "data/completed_steps", "data/total_steps"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// The newest event of a workflow, if malformed, still gives its offset, but
// is logged as Follow logs it, not dropped in silence.
func TestLastRecordLogsAMalformedEvent(t *testing.T) {
	env := bustest.New(t)
	var logs syncBuffer
	b, err := bus.Connect(testCtx(t), bus.Config{URL: env.URL, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	nc, err := nats.Connect(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	publishEvent(t, env.Bus, "wf-last", 1)
	// Header names as some clients canonicalise them.
	m := nats.NewMsg("agentbus.acme.events.wf-last")
	for k, v := range map[string]string{"Ce-Specversion": "1.0", "Ce-Id": "p2", "Ce-Source": "/js/agent",
		"Ce-Type": "io.agentbus.workflow.artifact.v1", "Ce-Tenantid": "acme", "Ce-Workflowid": "wf-last"} {
		m.Header[k] = []string{v}
	}
	m.Data = []byte(`{"name": "draft"}`)
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	bad, err := js.PublishMsg(m)
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.LastRecord(testCtx(t), tenant, "wf-last")
	if err != nil || r.Offset != bad.Sequence || r.Envelope.Type != "" {
		t.Fatalf("last record %+v (%v), want offset %d with no envelope", r, err, bad.Sequence)
	}
	out := logs.String()
	for _, want := range []string{"event not delivered to clients", "subject=agentbus.acme.events.wf-last", fmt.Sprintf("offset=%d", bad.Sequence),
		"type=io.agentbus.workflow.artifact.v1", "source=/js/agent", "data/artifact_id", "data/data"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}
