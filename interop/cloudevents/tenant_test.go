package cloudevents_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	cejs "github.com/cloudevents/sdk-go/protocol/nats_jetstream/v2"
	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/crypto/bcrypt"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/internal/natsauth"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/subjects"
)

// TestSDKTenantAccount runs the SDK as a tenant's own client user under
// tenant isolation (natsauth): the binding's constructors cannot serve it,
// because they ask for STREAM.INFO (and, failing that, create the stream),
// which a tenant account is not given. The SDK's client, event and message
// mapping still work: the binding's Sender built directly submits, and the
// binding's Message turns what a JetStream ordered consumer under
// natsauth.APIPrefix reads into SDK events.
func TestSDKTenantAccount(t *testing.T) {
	const tenant, workflow = "acme", "tenant-wf-1"
	url, user, pass := startIsolated(t, tenant)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	natsOpts := []nats.Option{nats.UserInfo(user, pass)}
	jsOpts := []nats.JSOpt{nats.APIPrefix(natsauth.APIPrefix)}
	// The refused API calls go unanswered: wait a second for each, not five.
	refused := []nats.JSOpt{nats.APIPrefix(natsauth.APIPrefix), nats.MaxWait(time.Second)}
	submit, _ := subjects.Submit(tenant)
	evs, _ := subjects.Events(tenant, workflow)

	if s, err := cejs.NewSender(url, subjects.StreamWorkflows, submit, natsOpts, refused); err == nil {
		_ = s.Close(ctx)
		t.Error("cejs.NewSender succeeded for a tenant user; the README can drop its tenant caveat")
	} else {
		t.Logf("cejs.NewSender as %s: %v", user, err)
	}
	if c, err := cejs.NewConsumer(url, subjects.StreamEvents, evs, natsOpts, refused, nil); err == nil {
		t.Error("cejs.NewConsumer succeeded for a tenant user; the README can drop its tenant caveat")
		_ = c.Close(ctx)
	} else {
		t.Logf("cejs.NewConsumer as %s: %v", user, err)
	}

	// Submit with the SDK client over the binding's Sender, built without
	// its constructor: Send only publishes and waits for the stream's ack.
	nc, err := nats.Connect(url, natsOpts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	jsm, err := nc.JetStream(jsOpts...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloudevents.NewClient(&cejs.Sender{Jsm: jsm, Conn: nc, Subject: submit})
	if err != nil {
		t.Fatal(err)
	}
	e := cloudevents.NewEvent()
	e.SetID(workflow)
	e.SetSource("/my/client")
	e.SetType(string(events.TypeWorkflowSubmitted))
	e.SetExtension("tenantid", tenant)
	e.SetExtension("workflowid", workflow)
	_ = e.SetData(cloudevents.ApplicationJSON, map[string]string{"query": "hello"})
	if res := c.Send(ctx, e); !cloudevents.IsACK(res) {
		t.Fatalf("submit as %s: %v", user, res)
	}

	// Follow with a JetStream ordered consumer under the tenant's API
	// prefix; the binding's Message reads each one into an SDK event.
	js, err := jetstream.NewWithAPIPrefix(nc, natsauth.APIPrefix)
	if err != nil {
		t.Fatal(err)
	}
	oc, err := js.OrderedConsumer(ctx, subjects.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{evs}})
	if err != nil {
		t.Fatalf("ordered consumer as %s: %v", user, err)
	}
	var got []string
	for {
		m, err := oc.Next(jetstream.FetchContext(ctx))
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		ev, err := binding.ToEvent(ctx, cejs.NewMessage(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}))
		if err != nil {
			t.Fatalf("SDK cannot read %s: %v", m.Subject(), err)
		}
		if ext := ev.Extensions(); ext["tenantid"] != tenant || ext["workflowid"] != workflow ||
			ev.DataContentType() != events.ContentTypeJSON || !bytes.Equal(ev.Data(), m.Data()) {
			t.Errorf("SDK read %v from %v", ev, m.Headers())
		}
		got = append(got, ev.Type())
		if events.Type(ev.Type()).Terminal() {
			break
		}
	}
	if last := got[len(got)-1]; last != string(events.TypeComplete) {
		t.Fatalf("events %v, want the last to be complete", got)
	}
}

// startIsolated starts a server with natsauth's accounts for one tenant,
// provisions it and runs an orchestrator and an echo worker as agentbus's
// own users; it returns the URL and the tenant's client user.
func startIsolated(t *testing.T, tenant string) (url, user, pass string) {
	t.Helper()
	m, err := natsauth.NewModel(natsauth.Config{Tenants: []natsauth.Tenant{{ID: tenant}}})
	if err != nil {
		t.Fatal(err)
	}
	creds := natsauth.Credentials{}
	if _, _, err := creds.Sync(m.Users()); err != nil {
		t.Fatal(err)
	}
	var conf bytes.Buffer
	if err := m.Render(&conf, creds, natsauth.RenderOptions{Cost: bcrypt.MinCost, Source: t.Name()}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "accounts.conf")
	if err := os.WriteFile(path, conf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	log := bustest.Logger(t)
	srv, err := broker.Start(broker.Config{DataDir: filepath.Join(dir, "data"), Addr: "127.0.0.1:-1", ConfigFile: path,
		Name: "isolated", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	b, err := bus.Connect(ctx, bus.Config{URL: srv.ClientURL(), Name: natsauth.UserOrchestrator, Logger: log,
		Options: []nats.Option{nats.UserInfo(natsauth.UserOrchestrator, creds[natsauth.UserOrchestrator])}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if err := b.Provision(ctx, bus.StreamsConfig{}); err != nil {
		t.Fatal(err)
	}
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: b, Agents: []agents.Agent{echo.Agent{}}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(ctx, orchestrator.Config{Bus: b, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
	user = natsauth.ClientUser(tenant)
	return srv.ClientURL(), user, creds[user]
}
