package natsauth_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/internal/natsauth"
)

// attempt is one thing tenant acme's users try against tenant beta.
type attempt struct {
	name string
	as   string // "client" or "worker": which of acme's users tries
	// sub, when set, is a subscription attempt; otherwise the attempt
	// publishes body on subject, as a request.
	sub     string
	subject string
	body    string
	// reply, when set, is a foreign reply subject: the publish itself is
	// allowed (it is acme's own subject) and only where the answer lands
	// matters, which the state comparison after the matrix checks.
	reply string
	// server marks an attempt that acme's permissions let through and that
	// the JetStream server itself refuses.
	server bool
	// role marks an attempt on acme's own subjects that only the
	// allow-lists refuse: the client is no worker, the worker no client.
	role bool
}

// consumerBody is a consumer create request for AGENTBUS_EVENTS.
func consumerBody(name, filter, deliver string, multi bool) string {
	cfg := map[string]any{"name": name, "ack_policy": "none", "inactive_threshold": int64(time.Minute)}
	if multi {
		cfg["filter_subjects"] = []string{filter}
	} else if filter != "" {
		cfg["filter_subject"] = filter
	}
	if deliver != "" {
		cfg["deliver_subject"] = deliver
	}
	return string(mustJSON(map[string]any{"stream_name": "AGENTBUS_EVENTS", "config": cfg}))
}

func durableBody(name, filter string) string {
	return string(mustJSON(map[string]any{"stream_name": "AGENTBUS_EVENTS",
		"config": map[string]any{"durable_name": name, "filter_subject": filter, "ack_policy": "explicit"}}))
}

func attempts() []attempt {
	api := natsauth.APIPrefix + "."
	const pfx = "$JS.API."
	bEvents, bWildcard := "agentbus.beta.events.wf-b", "agentbus.beta.events.>"
	lastB := `{"last_by_subj":"` + bEvents + `"}`
	return []attempt{
		// Plain subscriptions.
		{name: "core subscribe to beta's namespace", as: "client", sub: "agentbus.beta.>"},
		{name: "core subscribe to beta's workflow events", as: "client", sub: bEvents},
		{name: "core subscribe to every tenant's events", as: "client", sub: "agentbus.*.events.*"},
		{name: "core subscribe to beta's live events", as: "client", sub: "agentbus.beta.live.wf-b"},
		{name: "core subscribe to every tenant's live events", as: "client", sub: "agentbus.*.live.*"},
		{name: "worker subscribes to its tenant's live events", as: "worker", sub: "agentbus.acme.live.*"},
		{name: "core subscribe to everything", as: "client", sub: ">"},
		{name: "core subscribe to beta's checkpoints", as: "client", sub: "$KV.AGENTBUS_CHECKPOINTS.beta.>"},
		{name: "core subscribe to micro services", as: "client", sub: "$SRV.>"},
		{name: "core subscribe to JetStream advisories (consumer names)", as: "client", sub: "$JS.EVENT.>"},
		{name: "worker subscribes to beta's control", as: "worker", sub: "agentbus.beta.control.*"},
		{name: "worker subscribes to beta's steps", as: "worker", sub: "agentbus.beta.step.>"},
		{name: "worker subscribes to everything", as: "worker", sub: ">"},

		// Consumers on beta's events.
		{name: "the leak: push consumer on beta's events delivering to _INBOX.leak", as: "client",
			subject: api + "CONSUMER.CREATE.AGENTBUS_EVENTS.leak." + bWildcard, body: consumerBody("leak", bWildcard, "_INBOX.leak", false)},
		{name: "the leak through $JS.API", as: "client",
			subject: pfx + "CONSUMER.CREATE.AGENTBUS_EVENTS.leak." + bWildcard, body: consumerBody("leak", bWildcard, "_INBOX.leak", false)},
		{name: "pull consumer filtered on beta", as: "client",
			subject: api + "CONSUMER.CREATE.AGENTBUS_EVENTS.pull." + bEvents, body: consumerBody("pull", bEvents, "", false)},
		{name: "consumer create with beta's filter in the body only", as: "client",
			subject: api + "CONSUMER.CREATE.AGENTBUS_EVENTS.body", body: consumerBody("body", bWildcard, "", false)},
		{name: "legacy ephemeral consumer create", as: "client",
			subject: api + "CONSUMER.CREATE.AGENTBUS_EVENTS", body: consumerBody("", bWildcard, "", false)},
		{name: "legacy durable consumer create", as: "client",
			subject: api + "CONSUMER.DURABLE.CREATE.AGENTBUS_EVENTS.dur", body: durableBody("dur", bWildcard)},
		{name: "durable consumer create through $JS.API", as: "client",
			subject: pfx + "CONSUMER.DURABLE.CREATE.AGENTBUS_EVENTS.dur", body: durableBody("dur", bWildcard)},
		{name: "own filter in the subject, beta's in the body", as: "client", server: true,
			subject: api + "CONSUMER.CREATE.AGENTBUS_EVENTS.mix.agentbus.acme.events.>", body: consumerBody("mix", bWildcard, "", false)},
		{name: "own filter in the subject, beta's as filter_subjects", as: "client", server: true,
			subject: api + "CONSUMER.CREATE.AGENTBUS_EVENTS.mix.agentbus.acme.events.>", body: consumerBody("mix", bWildcard, "", true)},
		{name: "wildcard tenant in the filter", as: "client",
			subject: api + "CONSUMER.CREATE.AGENTBUS_EVENTS.wild.agentbus.*.events.>", body: consumerBody("wild", "agentbus.*.events.>", "", false)},
		{name: "list consumer names", as: "client", subject: api + "CONSUMER.NAMES.AGENTBUS_EVENTS", body: `{}`},
		{name: "list consumers", as: "client", subject: api + "CONSUMER.LIST.AGENTBUS_EVENTS", body: `{}`},
		{name: "stream info with beta's subjects", as: "client", subject: api + "STREAM.INFO.AGENTBUS_EVENTS", body: `{"subjects_filter":"agentbus.beta.>"}`},

		// Message gets.
		{name: "STREAM.MSG.GET of beta's last event", as: "client", subject: api + "STREAM.MSG.GET.AGENTBUS_EVENTS", body: lastB},
		{name: "$JS.API.STREAM.MSG.GET of beta's last event", as: "client", subject: pfx + "STREAM.MSG.GET.AGENTBUS_EVENTS", body: lastB},
		{name: "DIRECT.GET with beta's subject in the body", as: "client", subject: api + "DIRECT.GET.AGENTBUS_EVENTS", body: lastB},
		{name: "DIRECT.GET with beta's subject in the subject", as: "client", subject: api + "DIRECT.GET.AGENTBUS_EVENTS." + bEvents},
		{name: "$JS.API.DIRECT.GET with beta's subject in the subject", as: "client", subject: pfx + "DIRECT.GET.AGENTBUS_EVENTS." + bEvents},
		{name: "own DIRECT.GET subject, beta's subject in the body", as: "client", server: true,
			subject: api + "DIRECT.GET.AGENTBUS_EVENTS.agentbus.acme.events.wf-a", body: lastB},
		{name: "worker DIRECT.GET of beta's events", as: "worker", subject: api + "DIRECT.GET.AGENTBUS_EVENTS." + bEvents},

		// KV buckets.
		{name: "KV bucket info", as: "client", subject: api + "STREAM.INFO.KV_AGENTBUS_CHECKPOINTS"},
		{name: "KV bucket info through $JS.API", as: "client", subject: pfx + "STREAM.INFO.KV_AGENTBUS_CHECKPOINTS"},
		{name: "KV get of beta's checkpoint", as: "client",
			subject: api + "DIRECT.GET.KV_AGENTBUS_CHECKPOINTS.$KV.AGENTBUS_CHECKPOINTS.beta.wf-b"},
		{name: "KV get of beta's control record through $JS.API", as: "worker",
			subject: pfx + "DIRECT.GET.KV_AGENTBUS_CONTROL.$KV.AGENTBUS_CONTROL.beta.wf-b"},
		{name: "KV put of a control record for beta's workflow", as: "client", subject: "$KV.AGENTBUS_CONTROL.beta.wf-b", body: `{"action":"cancel"}`},
		{name: "KV put of beta's memory", as: "worker", subject: "$KV.AGENTBUS_MEMORY.beta.fact", body: `"forged"`},

		// Micro services.
		{name: "$SRV.PING", as: "client", subject: "$SRV.PING"},
		{name: "$SRV.INFO", as: "worker", subject: "$SRV.INFO"},
		{name: "agent card endpoint", as: "client", subject: "agentbus-agents.echo"},

		// Publishing into beta's subjects.
		{name: "submit as beta", as: "client", subject: "agentbus.beta.workflow.submit", body: `{"query":"forged"}`},
		{name: "cancel beta's workflow", as: "client", subject: "agentbus.beta.control.wf-b", body: `{"action":"cancel"}`},
		{name: "worker publishes an event for beta", as: "worker", subject: bEvents, body: `{"forged":true}`},
		{name: "worker replies for beta", as: "worker", subject: "agentbus.beta.reply.wf-b", body: `{"forged":true}`},
		{name: "worker hands a result for beta", as: "worker", subject: "agentbus.beta.result.wf-b", body: `{"forged":true}`},
		{name: "worker dead-letters for beta", as: "worker", subject: "agentbus.beta.deadletter.translate", body: `{"forged":true}`},
		{name: "worker dispatches a step for beta", as: "worker", subject: "agentbus.beta.step.translate", body: `{"forged":true}`},

		// Steps.
		{name: "pull from beta's worker consumer", as: "worker",
			subject: api + "CONSUMER.MSG.NEXT.AGENTBUS_STEPS.beta-STEP-translate", body: `{"batch":1,"no_wait":true}`},
		{name: "pull from the built-in consumer every tenant's echo steps share", as: "worker",
			subject: api + "CONSUMER.MSG.NEXT.AGENTBUS_STEPS.step-echo", body: `{"batch":1,"no_wait":true}`},
		{name: "own consumer name on beta's step filter", as: "worker",
			subject: api + "CONSUMER.CREATE.AGENTBUS_STEPS.acme-STEP-translate.agentbus.beta.step.translate",
			body:    `{"stream_name":"AGENTBUS_STEPS","config":{"durable_name":"acme-STEP-translate","filter_subject":"agentbus.beta.step.translate","ack_policy":"explicit"}}`},
		{name: "own consumer subject, beta's step filter in the body", as: "worker", server: true,
			subject: api + "CONSUMER.CREATE.AGENTBUS_STEPS.acme-STEP-translate.agentbus.acme.step.translate",
			body:    `{"stream_name":"AGENTBUS_STEPS","config":{"durable_name":"acme-STEP-translate","filter_subject":"agentbus.beta.step.translate","ack_policy":"explicit"}}`},
		{name: "ack (term) a step of beta's consumer", as: "worker", subject: "$JS.ACK.AGENTBUS_STEPS.beta-STEP-translate.1.1.1.1700000000000000000.0", body: "+TERM"},

		// Roles: acme's client is no worker and its worker no client.
		{name: "client replies to a step", as: "client", role: true, subject: "agentbus.acme.reply.wf-a", body: `{}`},
		{name: "client hands a step's result", as: "client", role: true, subject: "agentbus.acme.result.wf-a", body: `{}`},
		{name: "client pulls a step", as: "client", role: true, subject: api + "CONSUMER.MSG.NEXT.AGENTBUS_STEPS.acme-STEP-translate", body: `{"batch":1,"no_wait":true}`},
		{name: "worker submits", as: "worker", role: true, subject: "agentbus.acme.workflow.submit", body: `{"query":"x"}`},

		// Answers sent to beta's subjects: allowed publishes, foreign reply.
		{name: "submission whose stream ack goes to beta's checkpoint", as: "client",
			subject: "agentbus.acme.workflow.submit", reply: "$KV.AGENTBUS_CHECKPOINTS.beta.wf-b", body: `{"query":"inject"}`},
		{name: "consumer create whose answer goes to beta's event log", as: "client",
			subject: api + "CONSUMER.CREATE.AGENTBUS_EVENTS.inj.agentbus.acme.events.>", reply: bEvents,
			body: consumerBody("inj", "agentbus.acme.events.>", "", false)},
		{name: "direct get whose answer goes to beta's control record", as: "client",
			subject: api + "DIRECT.GET.AGENTBUS_EVENTS.agentbus.acme.events.wf-a", reply: "$KV.AGENTBUS_CONTROL.beta.wf-b"},
		{name: "reply whose stream ack goes to beta's submissions", as: "worker",
			subject: "agentbus.acme.reply.wf-a", reply: "agentbus.beta.workflow.submit", body: `{"inject":true}`},
	}
}

// TestTenantCannotReachAnotherTenant runs every attempt of tenant acme's
// users on tenant beta against a real server started with the rendered
// configuration: none brings back anything of beta's, none changes beta's
// stored state, and each is refused — by a permissions violation where
// the allow-lists apply. The whole matrix runs twice: with the model as
// rendered, and with every tenant user's allow-lists removed, to show that
// the account boundary alone already holds.
func TestTenantCannotReachAnotherTenant(t *testing.T) {
	for _, mode := range []struct {
		name  string
		strip bool
	}{{"allow-lists and accounts", false}, {"accounts alone", true}} {
		t.Run(mode.name, func(t *testing.T) {
			m := model(t)
			if mode.strip {
				for i := range m.Accounts {
					if m.Accounts[i].Tenant == "" {
						continue
					}
					for j := range m.Accounts[i].Users {
						m.Accounts[i].Users[j].Publish, m.Accounts[i].Users[j].Subscribe = nil, nil
					}
				}
			}
			testIsolation(t, m, !mode.strip)
		})
	}
}

// model is acme and beta, each with a worker of capability translate.
func model(t *testing.T) *natsauth.Model {
	t.Helper()
	m, err := natsauth.NewModel(natsauth.Config{Tenants: []natsauth.Tenant{
		{ID: "acme", Capabilities: []string{"translate"}},
		{ID: "beta", Capabilities: []string{"translate"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testIsolation(t *testing.T, m *natsauth.Model, allowLists bool) {
	e := start(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 4*deadline)
	defer cancel()
	seed(ctx, t, e)
	before := betaState(ctx, t, e.sys.JetStream())

	users := map[string]*client{"client": e.connect(natsauth.ClientUser("acme")), "worker": e.connect(natsauth.WorkerUser("acme"))}
	barrierSubject := map[string]string{"client": "agentbus.acme.events.barrier", "worker": "agentbus.acme.control.barrier"}
	for _, a := range attempts() {
		if a.role && !allowLists {
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			c := users[a.as]
			c.t = t
			if a.sub != "" {
				trySubscribe(ctx, t, e, c, a.sub, barrierSubject[a.as], allowLists)
				return
			}
			if a.reply != "" {
				o := c.publishOnly(a.subject, a.reply, nil, []byte(a.body))
				if o.kind != "sent" {
					t.Fatalf("publishing on its own subject %s was refused (%s): the attempt proves nothing", a.subject, o)
				}
				// The same request answered to acme itself: once its answer
				// is back, the one sent to beta's subject has gone out too.
				if o := c.request(a.subject, nil, []byte(strings.ReplaceAll(a.body, "inj", "in2"))); o.kind == "timeout" || o.kind == "permissions" {
					t.Fatalf("the same request with acme's own inbox: %s", o)
				}
				return
			}
			o := c.request(a.subject, nil, []byte(a.body))
			if leaks(o.msg) {
				t.Fatalf("LEAK: %s brought back beta's data: subject %s headers %v data %s", c.user, o.msg.Subject, o.msg.Header, o.msg.Data)
			}
			switch {
			case allowLists && !a.server && o.kind != "permissions":
				t.Fatalf("want a permissions violation for %s, got %s", a.subject, o)
			case !o.refused():
				t.Fatalf("not refused: %s", o)
			}
			t.Logf("%s: %s", c.user, o)
		})
	}

	after := betaState(ctx, t, e.sys.JetStream())
	if !maps.Equal(before, after) {
		t.Errorf("beta's stored state changed:\nbefore %v\nafter  %v", before, after)
	}
	t.Run("beta's own users get what acme could not", func(t *testing.T) { ownerSucceeds(ctx, t, e) })
}

// seed stores beta's secrets everywhere an attempt above aims, and an
// event of acme's own.
func seed(ctx context.Context, t *testing.T, e *env) {
	t.Helper()
	js := e.sys.JetStream()
	pub := func(subject string, h nats.Header, data string) {
		t.Helper()
		if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Header: h, Data: []byte(data)}); err != nil {
			t.Fatalf("seed %s: %v", subject, err)
		}
	}
	body := `{"secret":"` + secret + `"}`
	pub("agentbus.beta.events.wf-b", ceHeaders("io.agentbus.workflow.status.v1", "beta", "wf-b", "b-1"), body)
	pub("agentbus.acme.events.wf-a", ceHeaders("io.agentbus.workflow.status.v1", "acme", "wf-a", "a-1"), `{"acme":"own"}`)
	pub("agentbus.beta.workflow.submit", ceHeaders("io.agentbus.workflow.submitted.v1", "beta", "wf-b", "wf-b"), body)
	pub("agentbus.beta.reply.wf-b", nil, body)
	pub("agentbus.beta.step.translate", nil, body)
	pub("agentbus.beta.step.echo", nil, body)
	for _, b := range []string{"AGENTBUS_CHECKPOINTS", "AGENTBUS_CONTROL"} {
		kv, err := js.KeyValue(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, "beta.wf-b", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	kv, err := js.KeyValue(ctx, "AGENTBUS_MEMORY")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "beta.fact", []byte(body)); err != nil {
		t.Fatal(err)
	}
	// The shared consumer of a built-in capability, and beta's own worker
	// consumer, created by beta's worker user the way its agent would.
	if _, err := js.CreateOrUpdateConsumer(ctx, "AGENTBUS_STEPS", jetstream.ConsumerConfig{
		Durable: "step-echo", FilterSubject: "agentbus.*.step.echo", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	bw := e.connect(natsauth.WorkerUser("beta"))
	if _, err := bw.js.CreateOrUpdateConsumer(ctx, "AGENTBUS_STEPS", jetstream.ConsumerConfig{
		Durable: "beta-STEP-translate", FilterSubject: "agentbus.beta.step.translate", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatalf("beta's worker creates its own consumer: %v", err)
	}
}

// trySubscribe subscribes as c and proves that nothing of beta's arrives:
// the system publishes beta's secrets on every kind of subject and then a
// marker of acme's own that c may read; a message of beta's would have
// reached c before the marker.
func trySubscribe(ctx context.Context, t *testing.T, e *env, c *client, subject, barrier string, allowLists bool) {
	t.Helper()
	sub, first, err := c.subscribe(subject)
	switch {
	case err != nil:
		t.Logf("%s: %v", c.user, err)
	case allowLists:
		t.Fatalf("want a permissions violation for a subscription to %s", subject)
	}
	if leaks(first) {
		t.Fatalf("LEAK on %s: %s %s", subject, first.Subject, first.Data)
	}
	marker, _, err := c.subscribe(barrier)
	if err != nil {
		t.Fatalf("subscribe to acme's own %s: %v", barrier, err)
	}
	nc := e.sys.Conn()
	for _, s := range []string{"agentbus.beta.events.wf-barrier", "agentbus.beta.control.wf-barrier", "agentbus.beta.step.barrier",
		"$KV.AGENTBUS_CHECKPOINTS.beta.wf-barrier", "$SRV.PING", "$JS.EVENT.ADVISORY.barrier"} {
		if err := nc.Publish(s, []byte(secret)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Publish(barrier, []byte("marker")); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := marker.NextMsg(answerWait); err != nil {
		t.Fatalf("acme's own marker on %s: %v", barrier, err)
	}
	_ = marker.Unsubscribe()
	_ = c.nc.Flush()
	if sub == nil {
		return
	}
	defer func() {
		// Flushed, so that the next attempt finds no subscriber of acme's
		// own left over that would swallow its request.
		_ = sub.Unsubscribe()
		_ = c.nc.Flush()
	}()
	n, _, _ := sub.Pending()
	for range n {
		m, err := sub.NextMsg(time.Millisecond)
		if err != nil {
			break
		}
		if leaks(m) {
			t.Fatalf("LEAK on %s: %s %s", subject, m.Subject, m.Data)
		}
	}
}

// betaState is, for every stored subject of beta's (the barrier's aside),
// its message count and last sequence.
func betaState(ctx context.Context, t *testing.T, js jetstream.JetStream) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{"AGENTBUS_WORKFLOWS", "AGENTBUS_STEPS", "AGENTBUS_REPLIES", "AGENTBUS_EVENTS", "AGENTBUS_DEADLETTER",
		"KV_AGENTBUS_CHECKPOINTS", "KV_AGENTBUS_CONTROL", "KV_AGENTBUS_MEMORY", "KV_AGENTBUS_AGENTS"} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(">"))
		if err != nil {
			t.Fatal(err)
		}
		subjects := slices.Sorted(maps.Keys(info.State.Subjects))
		for _, subj := range subjects {
			if !strings.Contains(subj, ".beta.") || strings.Contains(subj, "barrier") {
				continue
			}
			last, err := s.GetLastMsgForSubject(ctx, subj)
			if err != nil {
				t.Fatal(err)
			}
			out[name+" "+subj] = fmt.Sprintf("%d messages, last #%d", info.State.Subjects[subj], last.Sequence)
		}
	}
	if len(out) == 0 {
		t.Fatal("beta has no stored state: the seed did not work")
	}
	return out
}

// ownerSucceeds shows that the matrix was not vacuous: beta's own users
// read, through the same paths, the secrets that acme's never got, and
// beta's step was never delivered to anyone before.
func ownerSucceeds(ctx context.Context, t *testing.T, e *env) {
	bc := e.connect(natsauth.ClientUser("beta"))
	api := natsauth.APIPrefix + "."

	o := bc.request(api+"DIRECT.GET.AGENTBUS_EVENTS.agentbus.beta.events.wf-b", nil, nil)
	if !leaks(o.msg) {
		t.Errorf("beta's direct get of its own event: %s", o)
	}

	oc, err := bc.js.OrderedConsumer(ctx, "AGENTBUS_EVENTS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"agentbus.beta.events.wf-b"}})
	if err != nil {
		t.Fatalf("beta's ordered consumer: %v", err)
	}
	m, err := oc.Next(jetstream.FetchMaxWait(answerWait))
	if err != nil || !strings.Contains(string(m.Data()), secret) {
		t.Errorf("beta's ordered consumer read %v (%v), want its secret", m, err)
	}

	sub, _, err := bc.subscribe("agentbus.beta.events.*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.sys.JetStream().Publish(ctx, "agentbus.beta.events.wf-live", []byte(secret)); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(answerWait); err != nil || string(m.Data) != secret {
		t.Errorf("beta's live tail: %v %v", m, err)
	}

	bw := e.connect(natsauth.WorkerUser("beta"))
	cons, err := bw.js.Consumer(ctx, "AGENTBUS_STEPS", "beta-STEP-translate")
	if err != nil {
		t.Fatalf("beta's worker binds its consumer: %v", err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(answerWait))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for sm := range batch.Messages() {
		got++
		md, err := sm.Metadata()
		if err != nil || md.NumDelivered != 1 || !strings.Contains(string(sm.Data()), secret) {
			t.Errorf("beta's step: %s, metadata %+v (%v): want beta's secret, delivered for the first time", sm.Data(), md, err)
		}
		if err := sm.DoubleAck(ctx); err != nil {
			t.Errorf("beta's worker acks: %v", err)
		}
	}
	if got != 1 || batch.Error() != nil {
		t.Errorf("beta's worker pulled %d steps (%v), want 1", got, batch.Error())
	}
}
