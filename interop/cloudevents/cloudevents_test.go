package cloudevents_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cejs "github.com/cloudevents/sdk-go/protocol/nats_jetstream/v2"
	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	ceclient "github.com/cloudevents/sdk-go/v2/client"
	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/internal/stacktest"
	"github.com/agentbus/agentbus/subjects"
)

// The README's example names these; the test checks them against the
// project's own names, so that a renamed stream or subject fails here.
const (
	readmeTenant   = "acme"
	readmeWorkflow = "my-wf-1"
)

// submitAndFollow is the README's CloudEvents SDK example (the Go block
// marked readme-test: cloudevents-sdk), verbatim: TestREADMEExample keeps
// the two the same.
func submitAndFollow(ctx context.Context, url string, handle func(cloudevents.Event)) error {
	sender, err := cejs.NewSender(url, "AGENTBUS_WORKFLOWS", "agentbus.acme.workflow.submit", nil, nil)
	if err != nil {
		return err
	}
	defer sender.Close(ctx)
	c, err := cloudevents.NewClient(sender)
	if err != nil {
		return err
	}
	e := cloudevents.NewEvent()
	e.SetID("my-wf-1")
	e.SetSource("/my/client")
	e.SetType("io.agentbus.workflow.submitted.v1")
	e.SetExtension("tenantid", "acme")
	e.SetExtension("workflowid", "my-wf-1")
	_ = e.SetData(cloudevents.ApplicationJSON, map[string]string{"query": "hello"})
	if res := c.Send(ctx, e); !cloudevents.IsACK(res) {
		return res
	}

	// An ordered consumer, because the SDK acks nothing; it delivers every
	// event from the workflow's first, in order, and one blocking callback
	// keeps that order (the SDK's default is GOMAXPROCS concurrent ones).
	consumer, err := cejs.NewConsumer(url, "AGENTBUS_EVENTS", "agentbus.acme.events.my-wf-1", nil, nil,
		[]nats.SubOpt{nats.OrderedConsumer()})
	if err != nil {
		return err
	}
	defer consumer.Close(ctx)
	r, err := cloudevents.NewClient(consumer, ceclient.WithPollGoroutines(1), ceclient.WithBlockingCallback())
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	return r.StartReceiver(ctx, func(e cloudevents.Event) {
		handle(e)
		switch e.Type() {
		case "io.agentbus.workflow.complete.v1", "io.agentbus.workflow.error.v1", "io.agentbus.workflow.cancelled.v1":
			stop()
		}
	})
}

// TestSDKRoundTrip submits a workflow with a cloudevents.Client over the
// SDK's JetStream binding, to a real orchestrator and echo worker, and
// receives its events with another: every one, in order, each with the
// attributes, extensions and data agentbus stored.
func TestSDKRoundTrip(t *testing.T) {
	env := startStack(t)
	checkREADMENames(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var (
		mu  sync.Mutex
		got []cloudevents.Event
	)
	if err := submitAndFollow(ctx, env.URL, func(e cloudevents.Event) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, e)
	}); err != nil {
		t.Fatalf("submitAndFollow: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("no terminal event before the deadline; got %d events", len(got))
	}

	// What agentbus stored: bus.Follow's envelopes, and the raw messages at
	// their offsets, headers and body as nats.go reads them.
	records := stored(ctx, t, env.Bus, readmeTenant, readmeWorkflow)
	stream, err := env.Bus.JetStream().Stream(ctx, subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(records) {
		t.Fatalf("SDK received %d events %v, stored %d", len(got), types(got), len(records))
	}
	last := got[len(got)-1]
	if last.Type() != string(events.TypeComplete) {
		t.Fatalf("last event %s, want %s (events %v)", last.Type(), events.TypeComplete, types(got))
	}
	t.Logf("received %v; complete: %s", types(got), last.Data())
	if !bytes.Contains(last.Data(), []byte(`"input":{"query":"hello"}`)) {
		t.Errorf("the echo step did not get the SDK's query: complete %s", last.Data())
	}
	for i, r := range records {
		e := got[i]
		raw, err := stream.GetMsg(ctx, r.Offset)
		if err != nil {
			t.Fatal(err)
		}
		// Every ce- header is an attribute or extension of the SDK's event
		// with the same value, and the event has nothing else.
		want := map[string]string{}
		for k, v := range raw.Header {
			if name, ok := strings.CutPrefix(strings.ToLower(k), "ce-"); ok {
				want[name] = v[0]
			}
		}
		if have := attributes(e); !maps.Equal(have, want) {
			t.Errorf("event %d (%s): SDK attributes\n%v\nstored headers\n%v", i, r.Envelope.Type, have, want)
		}
		if !bytes.Equal(e.Data(), raw.Data) {
			t.Errorf("event %d (%s): SDK data %s, stored %s", i, r.Envelope.Type, e.Data(), raw.Data)
		}
		if ct := e.DataContentType(); ct != events.ContentTypeJSON {
			t.Errorf("event %d: datacontenttype %q, want %q", i, ct, events.ContentTypeJSON)
		}
		// And the same as agentbus's own decoding.
		env := r.Envelope
		ext := e.Extensions()
		if e.ID() != env.ID || e.Source() != env.Source || e.Type() != string(env.Type) ||
			!e.Time().Equal(env.Time) || e.Subject() != env.Subject ||
			ext["tenantid"] != env.TenantID || str(ext["workflowid"]) != env.WorkflowID ||
			str(ext["stepid"]) != env.StepID || str(ext["traceparent"]) != env.TraceParent ||
			!bytes.Equal(e.Data(), env.Data) {
			t.Errorf("event %d: SDK %v\ndiffers from bus.Follow's %+v", i, e, env)
		}
	}
}

// TestSDKWire pins the header mapping both ways without a server: an event
// the SDK's binding writes decodes in agentbus, and one agentbus encodes
// reads in the SDK with every attribute.
func TestSDKWire(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 4, 5, 600, time.FixedZone("CET", 3600))
	t.Run("SDK to agentbus", func(t *testing.T) {
		e := cloudevents.NewEvent()
		e.SetID("wf-1")
		e.SetSource("/my/client")
		e.SetType(string(events.TypeWorkflowSubmitted))
		e.SetTime(at)
		e.SetExtension("tenantid", "acme")
		e.SetExtension("workflowid", "wf-1")
		if err := e.SetData(cloudevents.ApplicationJSON, map[string]string{"query": "hello"}); err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		h, err := cejs.WriteMsg(context.Background(), cloudevents.ToMessage(&e), &body)
		if err != nil {
			t.Fatal(err)
		}
		// The SDK writes ce-datacontenttype (as the NATS binding says) and
		// no Content-Type; the time keeps its offset.
		if h.Get("ce-datacontenttype") != "application/json" || h.Get("Content-Type") != "" || h.Get("content-type") != "" {
			t.Errorf("SDK headers %v", h)
		}
		if got, want := h.Get("ce-time"), at.Format(time.RFC3339Nano); got != want {
			t.Errorf("ce-time %q, want %q", got, want)
		}
		env, err := events.Decode(h, body.Bytes())
		if err != nil {
			t.Fatalf("agentbus does not decode the SDK's event: %v\nheaders %v", err, h)
		}
		if env.ID != "wf-1" || env.TenantID != "acme" || env.WorkflowID != "wf-1" || !env.Time.Equal(at) ||
			string(env.Data) != `{"query":"hello"}` {
			t.Errorf("decoded %+v", env)
		}
	})
	t.Run("agentbus to SDK", func(t *testing.T) {
		env, err := events.New(events.TypeStatus, events.EventKey("acme", "wf-1", 1), events.SourceOrchestrator,
			"acme", "wf-1", "s1", events.Status{State: "working"})
		if err != nil {
			t.Fatal(err)
		}
		env.Time = at
		env.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		env.Subject = "s1"
		msg, err := events.Encode(env)
		if err != nil {
			t.Fatal(err)
		}
		e, err := binding.ToEvent(context.Background(), cejs.NewMessage(&nats.Msg{Header: msg.Header, Data: msg.Data}))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"specversion": "1.0", "id": env.ID, "source": env.Source, "type": string(env.Type),
			"time": "2026-11-25T09:04:05.0000006Z", "subject": "s1", "datacontenttype": "application/json",
			"tenantid": "acme", "workflowid": "wf-1", "stepid": "s1", "traceparent": env.TraceParent,
		}
		if have := attributes(*e); !maps.Equal(have, want) {
			t.Errorf("SDK read\n%v\nwant\n%v", have, want)
		}
		if !bytes.Equal(e.Data(), msg.Data) {
			t.Errorf("data %s, want %s", e.Data(), msg.Data)
		}
	})
}

// TestREADMEExample checks that the README's CloudEvents SDK example is
// submitAndFollow as TestSDKRoundTrip runs it.
func TestREADMEExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- readme-test: cloudevents-sdk -->\n```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no go block marked readme-test: cloudevents-sdk")
	}
	src, err := os.ReadFile("cloudevents_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?s)\nfunc submitAndFollow\(.*?\n}\n`).Find(src)
	if fn == nil {
		t.Fatal("cloudevents_test.go has no func submitAndFollow")
	}
	block := string(m[1])
	// The README may lead with the imports and a comment; the function
	// must follow as written here.
	if !strings.HasSuffix(block, string(fn[1:])) {
		t.Errorf("README's cloudevents-sdk block does not end with submitAndFollow as tested:\n%s", fn)
	}
}

// checkREADMENames fails the test if the names submitAndFollow spells out
// are no longer the project's.
func checkREADMENames(t *testing.T) {
	t.Helper()
	submit, _ := subjects.Submit(readmeTenant)
	evs, _ := subjects.Events(readmeTenant, readmeWorkflow)
	for got, want := range map[string]string{
		"AGENTBUS_WORKFLOWS":                subjects.StreamWorkflows,
		"AGENTBUS_EVENTS":                   subjects.StreamEvents,
		"agentbus.acme.workflow.submit":     submit,
		"agentbus.acme.events.my-wf-1":      evs,
		"io.agentbus.workflow.submitted.v1": string(events.TypeWorkflowSubmitted),
		"io.agentbus.workflow.complete.v1":  string(events.TypeComplete),
		"io.agentbus.workflow.error.v1":     string(events.TypeError),
		"io.agentbus.workflow.cancelled.v1": string(events.TypeCancelled),
	} {
		if got != want {
			t.Errorf("submitAndFollow names %q, the project %q", got, want)
		}
	}
}

// attributes is every attribute and extension the SDK's event holds, by
// name, in the canonical string form the NATS binding puts in headers.
func attributes(e cloudevents.Event) map[string]string {
	out := map[string]string{"specversion": e.SpecVersion(), "id": e.ID(), "source": e.Source(), "type": e.Type()}
	if !e.Time().IsZero() {
		out["time"] = e.Time().UTC().Format(time.RFC3339Nano)
	}
	for k, v := range map[string]string{"subject": e.Subject(), "datacontenttype": e.DataContentType(), "dataschema": e.DataSchema()} {
		if v != "" {
			out[k] = v
		}
	}
	for k, v := range e.Extensions() {
		out[k] = fmt.Sprint(v)
	}
	return out
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func types(es []cloudevents.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Type()
	}
	return out
}

// stored is the workflow's events as bus.Follow decodes them, up to the
// terminal one.
func stored(ctx context.Context, t *testing.T, b *bus.Bus, tenant, workflow string) []bus.Record {
	t.Helper()
	var out []bus.Record
	err := b.Follow(ctx, tenant, workflow, 0, func(_ context.Context, r bus.Record) error {
		out = append(out, r)
		if r.Envelope.Type.Terminal() {
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("bus.Follow: %v", err)
	}
	return out
}

// startStack starts a server with an orchestrator and an echo worker, all
// stopped when the test ends.
func startStack(t *testing.T) *bustest.Env { return stacktest.Start(t, stacktest.Options{}).Env }
