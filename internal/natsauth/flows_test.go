package natsauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/internal/natsauth"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/subjects"
)

// tenantCapability is served only by tenant acme's own worker.
const tenantCapability = "translate"

// startRoles runs agentbus's orchestrator and a worker of echo and sleep,
// each connected as its own system user, until the test ends. The
// orchestrator's catalog also knows tenantCapability, which no built-in
// worker serves (DESIGN: a capability exists when something serves it;
// here the tenant's worker does, through natsauth.StepConsumer).
func startRoles(t *testing.T, e *env) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	log := bustest.Logger(t)
	wb := e.system(natsauth.UserWorker)
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: wb, Agents: []agents.Agent{echo.Agent{}, sleep.Agent{}}, Logger: log,
		ShutdownGrace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ob := e.sys
	o, err := orchestrator.New(ctx, orchestrator.Config{Bus: ob, Logger: log,
		Catalog: func(ctx context.Context, capability string) (bool, error) {
			if capability == tenantCapability {
				return true, nil
			}
			name, err := subjects.StepConsumer(capability)
			if err != nil {
				return false, nil
			}
			return ob.HasConsumer(ctx, subjects.StreamSteps, name)
		}})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
}

// submit publishes a workflow on acme's submit subject the way any NATS
// client would (a JetStream publish, so the stream's ack says it is
// stored).
func submit(ctx context.Context, t *testing.T, c *client, workflow string, data any) {
	t.Helper()
	h := ceHeaders(string(events.TypeWorkflowSubmitted), "acme", workflow, workflow)
	ack, err := c.js.PublishMsg(ctx, &nats.Msg{Subject: "agentbus.acme.workflow.submit", Header: h, Data: mustJSON(data)})
	if err != nil {
		t.Fatalf("acme submits %s: %v", workflow, err)
	}
	if ack.Stream != subjects.StreamWorkflows {
		t.Fatalf("acme's submission stored in %s", ack.Stream)
	}
}

// follow reads a workflow's events with an ordered consumer of acme's
// own until stop says so, and returns the consumer.
func follow(ctx context.Context, t *testing.T, c *client, workflow string, stop func(jetstream.Msg) bool) jetstream.Consumer {
	t.Helper()
	oc, err := c.js.OrderedConsumer(ctx, subjects.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"agentbus.acme.events." + workflow}})
	if err != nil {
		t.Fatalf("acme's ordered consumer on %s: %v", workflow, err)
	}
	// Messages keeps pull requests open with heartbeats, as a follower
	// that stays on does (agentbus's own followers too).
	it, err := oc.Messages()
	if err != nil {
		t.Fatalf("following %s: %v", workflow, err)
	}
	defer it.Stop()
	wait, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	defer context.AfterFunc(wait, it.Stop)()
	var seen []string
	for {
		m, err := it.Next()
		if err != nil {
			t.Fatalf("following %s (saw %v): %v", workflow, seen, err)
		}
		seen = append(seen, m.Headers().Get("ce-type"))
		if stop(m) {
			return oc
		}
	}
}

func ofType(typ events.Type) func(jetstream.Msg) bool {
	return func(m jetstream.Msg) bool { return m.Headers().Get("ce-type") == string(typ) }
}

// TestTenantOwnFlows: with the rendered configuration and agentbus's roles
// running as system users, tenant acme's client user submits, follows its
// events with an ordered consumer (and a live core subscription, and a
// direct get), and cancels, and acme's worker user serves a step of its
// own capability — everything a tenant's program needs, over bare NATS.
func TestTenantOwnFlows(t *testing.T) {
	e := start(t, model(t))
	startRoles(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 3*deadline)
	defer cancel()
	ac := e.connect(natsauth.ClientUser("acme"))

	t.Run("submit, follow with an ordered consumer, tail live, direct get", func(t *testing.T) {
		ac.t = t
		live, _, err := ac.subscribe("agentbus.acme.events.*")
		if err != nil {
			t.Fatalf("acme's live tail: %v", err)
		}
		stored, _, err := ac.subscribe("agentbus.acme.live.*")
		if err != nil {
			t.Fatalf("acme's live subject: %v", err)
		}
		submit(ctx, t, ac, "wf-1", map[string]string{"query": "hello"})
		n := 0
		oc := follow(ctx, t, ac, "wf-1", func(m jetstream.Msg) bool { n++; return ofType(events.TypeComplete)(m) })
		info, err := oc.Info(ctx)
		if err != nil || info.Config.FilterSubject != "agentbus.acme.events.wf-1" {
			t.Errorf("info of acme's own consumer: %+v %v", info, err)
		}
		o := ac.request(natsauth.APIPrefix+".DIRECT.GET.AGENTBUS_EVENTS.agentbus.acme.events.wf-1", nil, nil)
		if o.kind != "answer" || o.msg.Header.Get("ce-type") != string(events.TypeComplete) {
			t.Errorf("acme's direct get of its workflow's last event: %s %v", o, o.msg)
		}
		// The live tail saw the same events, each once.
		for i := range n {
			m, err := live.NextMsg(deadline)
			if err != nil {
				t.Fatalf("live tail, event %d of %d: %v", i+1, n, err)
			}
			if m.Subject != "agentbus.acme.events.wf-1" {
				t.Fatalf("live tail got %s", m.Subject)
			}
		}
		if p, _, _ := live.Pending(); p != 0 {
			t.Errorf("live tail has %d events more than the %d stored", p, n)
		}
		// The live subject: the same events as stored, each with its
		// offset and the workflow's previous one, a chain from 0.
		var prev uint64
		for i := range n {
			m, err := stored.NextMsg(deadline)
			if err != nil {
				t.Fatalf("live subject, event %d of %d: %v", i+1, n, err)
			}
			if m.Subject != "agentbus.acme.live.wf-1" || m.Header.Get(nats.JSLastSequence) != fmt.Sprint(prev) {
				t.Fatalf("live subject got %s after offset %d: %v", m.Subject, prev, m.Header)
			}
			if prev, err = strconv.ParseUint(m.Header.Get(nats.JSSequence), 10, 64); err != nil {
				t.Fatalf("live subject: event %d has no offset: %v", i+1, m.Header)
			}
		}
	})

	t.Run("cancel on its control subject", func(t *testing.T) {
		ac.t = t
		submit(ctx, t, ac, "wf-2", map[string]any{"plan": map[string]any{"steps": []map[string]any{
			{"id": "s0", "capability": sleep.Capability, "input": map[string]int64{"ms": time.Hour.Milliseconds()}}}}})
		follow(ctx, t, ac, "wf-2", ofType(events.TypeProgress)) // the step runs
		o := ac.request("agentbus.acme.control.wf-2", nil, []byte(`{"action":"cancel","reason":"changed my mind"}`))
		if o.kind != "answer" || !strings.Contains(o.detail, `"applied":true`) {
			t.Fatalf("acme's cancel was answered %s", o)
		}
		follow(ctx, t, ac, "wf-2", ofType(events.TypeCancelled))
	})

	for _, way := range []struct {
		name, workflow string
		hand           bool
	}{
		{"its own worker serves a step", "wf-3", false},
		{"its own worker hands a step's result straight to an orchestrator", "wf-4", true},
	} {
		t.Run(way.name, func(t *testing.T) { ownWorkerServes(ctx, t, e, ac, way.workflow, way.hand) })
	}
	t.Run("its own worker takes a step back with a verdict and gives it back", func(t *testing.T) { ownWorkerGivesBack(ctx, t, e, ac) })
}

// ownWorkerGivesBack: acme's worker user hands t1's answer over with an
// offer (eager dispatch), gets t2's request back with the verdict, and —
// as a worker that cannot finish a handed step does — publishes it on its
// own step subject, pulls it from its consumer and serves it there.
func ownWorkerGivesBack(ctx context.Context, t *testing.T, e *env, ac *client) {
	aw, cons := ownWorker(ctx, t, e, ac)
	const wf = "wf-5"
	submit(ctx, t, ac, wf, map[string]any{"plan": map[string]any{"steps": []map[string]any{
		{"id": "t1", "capability": tenantCapability, "input": "uno"},
		{"id": "t2", "capability": tenantCapability, "input": "dos", "depends_on": []string{"t1"}}}}})
	pull := func() jetstream.Msg {
		t.Helper()
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(deadline))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			return m
		}
		t.Fatalf("acme's worker pulled nothing (%v)", batch.Error())
		return nil
	}
	m := pull()
	key := "acme/" + wf + "/t1/1"
	reply := ceHeaders(string(events.TypeStepCompleted), "acme", wf, key)
	reply.Set("ce-stepid", "t1")
	reply.Set("Agentbus-Offer", tenantCapability)
	reply.Set("Agentbus-Offer-Until", strconv.FormatInt(time.Now().Add(5*time.Second).UnixMilli(), 10))
	o := aw.request("agentbus.acme.result."+wf, reply, mustJSON(map[string]any{"step_id": "t1", "capability": tenantCapability, "attempt": 1, "output": "UNO"}))
	if o.kind != "answer" || o.msg.Header.Get("Agentbus-Taken") != "+OK" || o.msg.Header.Get("ce-stepid") != "t2" {
		t.Fatalf("the verdict on t1 brought %s, want t2's request back", o)
	}
	if err := m.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	back := &nats.Msg{Subject: "agentbus.acme.step." + tenantCapability, Header: o.msg.Header, Data: o.msg.Data}
	back.Header.Del("Agentbus-Taken")
	back.Header.Set("Nats-Msg-Id", back.Header.Get("ce-id"))
	if _, err := aw.js.PublishMsg(ctx, back); err != nil {
		t.Fatalf("acme's worker gives t2 back on its step subject: %v", err)
	}
	m = pull()
	if err := serveStep(ctx, aw, m, true); err != nil {
		t.Fatalf("acme's worker serves t2: %v", err)
	}
	follow(ctx, t, ac, wf, func(m jetstream.Msg) bool {
		if ofType(events.TypeComplete)(m) {
			if !strings.Contains(string(m.Data()), "DOS") {
				t.Errorf("complete: %s, want t2's output", m.Data())
			}
			return true
		}
		return ofType(events.TypeError)(m)
	})
}

// ownWorker connects acme's worker user and has it make its step
// consumer of tenantCapability.
func ownWorker(ctx context.Context, t *testing.T, e *env, ac *client) (*client, jetstream.Consumer) {
	t.Helper()
	ac.t = t
	aw := e.connect(natsauth.WorkerUser("acme"))
	aw.t = t
	name, err := natsauth.StepConsumer("acme", tenantCapability)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := aw.js.CreateOrUpdateConsumer(ctx, subjects.StreamSteps, jetstream.ConsumerConfig{
		Durable: name, FilterSubject: "agentbus.acme.step." + tenantCapability, AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatalf("acme's worker creates %s: %v", name, err)
	}
	return aw, cons
}

// ownWorkerServes has acme's worker user serve one step of workflow, its
// answer handed to an orchestrator or published on the replies stream.
func ownWorkerServes(ctx context.Context, t *testing.T, e *env, ac *client, wf string, hand bool) {
	aw, cons := ownWorker(ctx, t, e, ac)
	if _, _, err := aw.subscribe("agentbus.acme.control.*"); err != nil {
		t.Errorf("acme's worker listens for cancels: %v", err)
	}
	submit(ctx, t, ac, wf, map[string]any{"plan": map[string]any{"steps": []map[string]any{
		{"id": "t1", "capability": tenantCapability, "input": "hola"}}}})
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(deadline))
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	for m := range batch.Messages() {
		served++
		if err := serveStep(ctx, aw, m, hand); err != nil {
			t.Fatalf("acme's worker: %v", err)
		}
	}
	if served != 1 {
		t.Fatalf("acme's worker pulled %d steps (%v)", served, batch.Error())
	}
	var progress bool
	follow(ctx, t, ac, wf, func(m jetstream.Msg) bool {
		progress = progress || strings.Contains(string(m.Data()), "translating")
		if ofType(events.TypeComplete)(m) {
			if !strings.Contains(string(m.Data()), "HOLA") {
				t.Errorf("complete: %s, want the worker's output", m.Data())
			}
			return true
		}
		return ofType(events.TypeError)(m)
	})
	if !progress {
		t.Error("acme's client never saw its worker's progress event")
	}
}

// serveStep does what an agent in any language does with a step: an
// in-progress ack, a progress event, the reply (handed to an orchestrator
// by a request on the result subject, or published on the replies
// stream), then the ack.
func serveStep(ctx context.Context, c *client, m jetstream.Msg, hand bool) error {
	var step struct {
		StepID     string          `json:"step_id"`
		Capability string          `json:"capability"`
		Attempt    int             `json:"attempt"`
		Input      json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(m.Data(), &step); err != nil {
		return err
	}
	h := m.Headers()
	tenant, workflow := h.Get("ce-tenantid"), h.Get("ce-workflowid")
	if tenant != "acme" {
		return fmt.Errorf("a step of tenant %q reached acme's worker", tenant)
	}
	if err := m.InProgress(); err != nil {
		return fmt.Errorf("in-progress ack: %w", err)
	}
	key := fmt.Sprintf("%s/%s/%s/%d", tenant, workflow, step.StepID, step.Attempt)
	ev := ceHeaders(string(events.TypeProgress), tenant, workflow, key+"/emit/1")
	ev.Set("ce-stepid", step.StepID)
	ev.Set("Nats-Msg-Id", key+"/emit/1")
	if _, err := c.js.PublishMsg(ctx, &nats.Msg{Subject: "agentbus." + tenant + ".events." + workflow, Header: ev,
		Data: mustJSON(map[string]any{"completed_steps": 0, "total_steps": 0, "percent": 50, "step_id": step.StepID, "message": "translating"})}); err != nil {
		return fmt.Errorf("progress event: %w", err)
	}
	var in string
	if err := json.Unmarshal(step.Input, &in); err != nil {
		return err
	}
	reply := ceHeaders(string(events.TypeStepCompleted), tenant, workflow, key)
	reply.Set("ce-stepid", step.StepID)
	data := mustJSON(map[string]any{"step_id": step.StepID, "capability": step.Capability, "attempt": step.Attempt, "output": strings.ToUpper(in)})
	if hand {
		if o := c.request("agentbus."+tenant+".result."+workflow, reply, data); o.kind != "answer" || string(o.msg.Data) != "+OK" {
			return fmt.Errorf("result handed to an orchestrator: %s", o)
		}
		return m.DoubleAck(ctx)
	}
	reply.Set("Nats-Msg-Id", key)
	if _, err := c.js.PublishMsg(ctx, &nats.Msg{Subject: "agentbus." + tenant + ".reply." + workflow, Header: reply, Data: data}); err != nil {
		return fmt.Errorf("reply: %w", err)
	}
	return m.DoubleAck(ctx)
}

// TestPushConsumerDeliversInsideAgentbusOnly pins down what a tenant can
// still do with the consumer it may create on its own events: make it a
// push consumer with any deliver subject (no permission can see into a
// request's body). The deliver subject is one of account AGENTBUS, not of
// the tenant's, so (1) nothing reaches the tenant's account by it — an
// _INBOX of the tenant's is no interest for it — and (2) if something in
// AGENTBUS listens on exactly that subject, the server delivers the
// tenant's own events there, under their original subject, so that
// agentbus's control subscribers, which read the subject, refuse them;
// nothing is stored under another tenant's subjects.
func TestPushConsumerDeliversInsideAgentbusOnly(t *testing.T) {
	e := start(t, model(t))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	js := e.sys.JetStream()
	if _, err := js.Publish(ctx, "agentbus.acme.events.wf-a", []byte(`{"acme":"own"}`)); err != nil {
		t.Fatal(err)
	}
	ac := e.connect(natsauth.ClientUser("acme"))
	if _, _, err := ac.subscribe("_INBOX.>"); err != nil {
		t.Fatal(err)
	}
	// What agentbus's workers do: listen to every tenant's control subject.
	control, err := e.sys.Conn().SubscribeSync(subjects.AllControl)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sys.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	create := func(name, deliver string) {
		t.Helper()
		o := ac.request(natsauth.APIPrefix+".CONSUMER.CREATE.AGENTBUS_EVENTS."+name+".agentbus.acme.events.>", nil,
			[]byte(consumerBody(name, "agentbus.acme.events.>", deliver, false)))
		if o.kind != "answer" {
			t.Fatalf("acme's push consumer on its own events: %s", o)
		}
	}

	create("push-inbox", "_INBOX.acme-push")
	s, err := js.Stream(ctx, subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.PushConsumer(ctx, "push-inbox")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := c.Info(ctx); err != nil || info.PushBound || info.Delivered.Consumer != 0 {
		t.Errorf("a push consumer to _INBOX.acme-push while acme listens on _INBOX.>: %+v %v; want no interest, nothing delivered", info, err)
	}

	// The worst case: something in AGENTBUS listens on exactly the deliver
	// subject (a wildcard subscription alone is no interest for the
	// server, which then delivers nothing).
	exact, err := e.sys.Conn().SubscribeSync("agentbus.beta.control.wf-b")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sys.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	create("push-control", "agentbus.beta.control.wf-b")
	if m, err := exact.NextMsg(deadline); err != nil || m.Subject != "agentbus.acme.events.wf-a" {
		t.Fatalf("the exact listener got %v (%v), want acme's event under acme's own subject", m, err)
	}
	m, err := control.NextMsg(deadline)
	if err != nil {
		t.Fatalf("agentbus's control listener: %v", err)
	}
	if m.Subject != "agentbus.acme.events.wf-a" {
		t.Fatalf("delivered under %s, want acme's own subject", m.Subject)
	}
	var ce *events.ControlError
	if _, _, err := events.DecodeControl(m.Subject, m.Header, m.Data); !errors.As(err, &ce) {
		t.Errorf("agentbus's control decoding accepted acme's event delivered to beta's control subject: %v", err)
	}
	// Nothing of it is stored anywhere under beta.
	for _, name := range []string{subjects.StreamWorkflows, subjects.StreamEvents, subjects.StreamReplies} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter("agentbus.beta.>"))
		if err != nil {
			t.Fatal(err)
		}
		if len(info.State.Subjects) != 0 {
			t.Errorf("%s holds beta subjects %v", name, info.State.Subjects)
		}
	}
}
