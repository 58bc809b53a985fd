package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// rawEvent is a client event read with plain nats.go.
type rawEvent struct {
	typ, step string
	data      map[string]any
}

// followRaw reads a workflow's events subject with a plain JetStream ordered
// consumer until a terminal type, as an external client would.
func followRaw(t *testing.T, js jetstream.JetStream, subject string) []rawEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, "AGENTBUS_EVENTS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	var out []rawEvent
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(15 * time.Second))
		if err != nil {
			t.Fatalf("waiting for events on %s: %v (have %v)", subject, err, out)
		}
		var d map[string]any
		_ = json.Unmarshal(m.Data(), &d)
		ev := rawEvent{typ: m.Headers().Get("ce-type"), step: m.Headers().Get("ce-stepid"), data: d}
		out = append(out, ev)
		switch ev.typ {
		case "io.agentbus.workflow.complete.v1", "io.agentbus.workflow.error.v1", "io.agentbus.workflow.cancelled.v1":
			return out
		}
	}
}

func rawConn(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func ceHeaders(id, workflow string) map[string]string {
	return map[string]string{
		"ce-specversion": "1.0", "ce-id": id, "ce-source": "/my/nats/client",
		"ce-type": "io.agentbus.workflow.submitted.v1", "ce-tenantid": "acme", "ce-workflowid": workflow,
		"ce-time": time.Now().UTC().Format(time.RFC3339Nano), "Content-Type": "application/json",
	}
}

func TestRawNATSClientRunsADiamond(t *testing.T) {
	s := startServe(t, t.TempDir())
	_, js := rawConn(t, s.info.NATSURL)
	rawSubmit(t, js, "agentbus.acme.workflow.submit", ceHeaders("raw-1", "raw-diamond"), `{"plan":{"steps":[
		{"id":"A","capability":"echo","input":{"x":1}},
		{"id":"B","capability":"echo","depends_on":["A"]},{"id":"C","capability":"echo","depends_on":["A"]},
		{"id":"D","capability":"echo","depends_on":["B","C"]}]}}`)
	evs := followRaw(t, js, "agentbus.acme.events.raw-diamond")
	end := evs[len(evs)-1]
	if end.typ != "io.agentbus.workflow.complete.v1" {
		t.Fatalf("ended with %s: %v", end.typ, end.data)
	}
	res, _ := json.Marshal(end.data["result"])
	if !strings.Contains(string(res), `"A":{"input":{"x":1},"step_id":"A"}`) {
		t.Fatalf("D's result does not carry A's output: %s", res)
	}
	// The gateway sees the same workflow.
	code, out, _ := cli(t, "watch", "--url", s.info.HTTPURL, "--tenant", "acme", "raw-diamond")
	if code != exitCompleted || !strings.Contains(out, "complete") {
		t.Fatalf("watch raw workflow: exit %d\n%s", code, out)
	}
}

func TestMalformedSubmissionsFailClearlyAndServingGoesOn(t *testing.T) {
	s := startServe(t, t.TempDir())
	nc, js := rawConn(t, s.info.NATSURL)

	// Data that breaks the schema: the workflow fails with the pointer.
	rawSubmit(t, js, "agentbus.acme.workflow.submit", ceHeaders("bad-data", "bad-data"), `{"plan":{"steps":[{"id":"A"}]}}`)
	evs := followRaw(t, js, "agentbus.acme.events.bad-data")
	end := evs[len(evs)-1]
	if end.typ != "io.agentbus.workflow.error.v1" || end.data["pointer"] != "data/plan/steps/0/capability" {
		t.Fatalf("malformed data: %s %v", end.typ, end.data)
	}

	// A missing CloudEvents attribute: named in the error.
	h := ceHeaders("no-source", "no-source")
	delete(h, "ce-source")
	rawSubmit(t, js, "agentbus.acme.workflow.submit", h, `{"query":"q"}`)
	evs = followRaw(t, js, "agentbus.acme.events.no-source")
	if end := evs[len(evs)-1]; end.typ != "io.agentbus.workflow.error.v1" || end.data["pointer"] != "ce-source" {
		t.Fatalf("missing ce-source: %s %v", end.typ, end.data)
	}

	// Not JSON at all, a bad tenant in the subject, a tenant header that
	// disagrees with the subject: terminated, never redelivered.
	rawSubmit(t, js, "agentbus.acme.workflow.submit", ceHeaders("garbage", "garbage"), `{not json`)
	rawSubmit(t, js, "agentbus.Bad_Tenant.workflow.submit", ceHeaders("badtenant", "badtenant"), `{"query":"q"}`)
	rawSubmit(t, js, "agentbus.other.workflow.submit", ceHeaders("spoof", "spoof"), `{"query":"q"}`)

	// The server keeps serving, and nothing is left pending.
	if code, _, stderr := cli(t, "ask", "--url", s.info.HTTPURL, "still serving"); code != exitCompleted {
		t.Fatalf("after malformed input: exit %d %s", code, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		st, err := js.Stream(ctx, "AGENTBUS_WORKFLOWS")
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d submissions still pending after bad input", info.State.Msgs)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if _, err := js.KeyValue(ctx, "AGENTBUS_CHECKPOINTS"); err != nil {
		t.Fatal(err)
	}
	kv, _ := js.KeyValue(ctx, "AGENTBUS_CHECKPOINTS")
	if _, err := kv.Get(ctx, "other.spoof"); err == nil {
		t.Fatal("a submission whose ce-tenantid disagrees with its subject started a workflow")
	}
	_ = nc
}
