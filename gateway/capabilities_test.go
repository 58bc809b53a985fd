package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/subjects"
)

// Tokens of the capabilities tests.
const (
	capAcme  = "cap-acme-client-0123456789"
	capAdmin = "cap-ops-admin-0123456789"
)

// capsWorld is what TestAgentsCapabilitiesPerTenant sets up on a real
// server, with no orchestrator (nothing admits the queued steps): a
// registered sleep worker that says it has 3 slots, whose consumer has one
// step of acme running and one idle slot (the third runs a step handed to
// it, which the consumer does not see); a registered echo agent that never bound a consumer; in
// the queue, acme's sleep steps at priorities 3 and 5, beta's at 1, and
// beta's translate steps, a capability no agent offers.
type capsWorld struct {
	env    *bustest.Env
	s      *stack
	js     jetstream.JetStream
	queued [2]time.Time // before acme's first queued step and after the last
}

func newCapsWorld(t *testing.T) *capsWorld {
	t.Helper()
	env := bustest.New(t)
	ctx := t.Context()
	w := &capsWorld{env: env, js: env.Bus.JetStream()}
	if err := env.Bus.EnsureQueue(ctx); err != nil {
		t.Fatal(err)
	}
	reg, err := discovery.New(ctx, env.Bus, llm.LocalEmbedder{Dim: 32})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	now := time.Now().UTC()
	for _, a := range []struct {
		name, capability string
		slots            int
	}{{"sleep", "sleep", 3}, {"echo", "echo", 0}} {
		r := discovery.Registration{Instance: a.name + "-1", Worker: "w", Name: a.name, Version: "1.0.0", Description: a.name,
			Capabilities: []string{a.capability}, PID: os.Getpid(), StartedAt: now, HeartbeatAt: now,
			HeartbeatMS: time.Hour.Milliseconds(), SelfHealthy: true, Slots: a.slots}
		if err := reg.Put(ctx, r, time.Hour); err != nil {
			t.Fatal(err)
		}
	}

	// The sleep consumer, as a worker binds it: one delivery held without
	// an ack (running), then one pull waiting (an idle slot).
	durable, _ := subjects.StepConsumer("sleep")
	filter, _ := subjects.StepFilter("sleep")
	if err := env.Bus.EnsureConsumer(ctx, bus.ConsumeConfig{Stream: subjects.StreamSteps, Durable: durable, Filter: filter, Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	w.publish(t, "agentbus.acme.step.sleep")
	cons, err := w.js.Consumer(ctx, subjects.StreamSteps, durable)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(deadline))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := <-batch.Messages(); !ok || m.Subject() != "agentbus.acme.step.sleep" {
		t.Fatalf("fetched %v: want acme's sleep step", m)
	}
	if _, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Hour)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "sleep's consumer to have 1 running and 1 idle", func() bool {
		l, err := env.Bus.CapabilityLoad(ctx, "sleep")
		return err == nil && l.Running == 1 && l.Idle == 1
	})

	w.queued[0] = time.Now()
	for _, subj := range []string{"agentbus.acme.queue.sleep.3", "agentbus.acme.queue.sleep.5", "agentbus.acme.queue.sleep.3",
		"agentbus.beta.queue.sleep.1", "agentbus.beta.queue.sleep.1", "agentbus.beta.queue.sleep.1", "agentbus.beta.queue.sleep.1",
		"agentbus.beta.queue.translate.3", "agentbus.beta.queue.translate.3"} {
		w.publish(t, subj)
	}
	w.queued[1] = time.Now()
	w.s = startGateway(t, env, func(c *gateway.Config) {
		c.Registry = reg
		c.Auth.Tokens = []gateway.Token{
			{Token: capAcme, Tenant: "acme", Role: gateway.RoleClient},
			{Token: capAdmin, Tenant: "ops", Role: gateway.RoleAdmin},
		}
	})
	return w
}

func (w *capsWorld) publish(t *testing.T, subj string) {
	t.Helper()
	if _, err := w.js.Publish(t.Context(), subj, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
}

// get asks GET path with token and decodes a 200.
func (w *capsWorld) get(t *testing.T, path, token string) (gateway.CapabilitiesResponse, []byte) {
	t.Helper()
	r := w.s.mustDo(t, http.MethodGet, path, nil, "Authorization", "Bearer "+token)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	var out gateway.CapabilitiesResponse
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatal(err)
	}
	return out, r.Body
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// TestAgentsCapabilitiesPerTenant: GET /v1/capabilities shows a tenant,
// per capability it can see, the workers and its own steps — queued by
// priority, in flight, the oldest one's wait, throttled while a worker
// idles — and nothing of another tenant's; an admin may ask for every
// tenant's; answers within a second share one reading.
func TestAgentsCapabilitiesPerTenant(t *testing.T) {
	w := newCapsWorld(t)
	start := time.Now()
	got, body := w.get(t, "/v1/capabilities", capAcme)
	end := time.Now()
	if got.TenantID != "acme" || len(got.Capabilities) != 2 {
		t.Fatalf("answer %s: want acme's echo and sleep", body)
	}
	if strings.Contains(string(body), "beta") || strings.Contains(string(body), "translate") || strings.Contains(string(body), `"tenants"`) {
		t.Errorf("acme's answer %s shows something of beta's", body)
	}
	echo, sleep := got.Capabilities[0], got.Capabilities[1]
	if echo.Capability != "echo" || echo.Instances != 1 || echo.Slots != 0 || echo.Queued != 0 || echo.InFlight != 0 || echo.Throttled {
		t.Errorf("echo %+v: want 1 instance, no slot (never bound), nothing queued", echo)
	}
	if sleep.Capability != "sleep" || sleep.Instances != 1 || sleep.Healthy != 1 || sleep.Slots != 3 || sleep.Idle != 1 ||
		sleep.Queued != 3 || sleep.InFlight != 1 || !sleep.Throttled ||
		len(sleep.QueuedByPriority) != 2 || sleep.QueuedByPriority["3"] != 2 || sleep.QueuedByPriority["5"] != 1 {
		t.Errorf("sleep %s: want 3 slots (as its instance says: its consumer sees 2), 1 idle, 3 queued (2 at 3, 1 at 5), 1 in flight, throttled", mustJSON(t, sleep))
	}
	if o := sleep.OldestQueuedMS; o == nil || *o < start.Sub(w.queued[1]).Milliseconds()-1 || *o > end.Sub(w.queued[0]).Milliseconds()+1 {
		t.Errorf("oldest queued %v ms: want between %v and %v", o, start.Sub(w.queued[1]), end.Sub(w.queued[0]))
	}

	// Within a second: the same reading. A step queued since shows once
	// the reading is over a second old.
	again, _ := w.get(t, "/v1/capabilities", capAcme)
	if time.Since(start) < time.Second && !again.AsOf.Equal(got.AsOf) {
		t.Errorf("second answer read at %v, first at %v: want one reading a second", again.AsOf, got.AsOf)
	}
	w.publish(t, "agentbus.acme.queue.sleep.1")
	waitFor(t, "the fourth queued step to show", func() bool {
		c, _ := w.get(t, "/v1/capabilities", capAcme)
		return c.Capabilities[1].Queued == 4
	})

	// Every tenant's, for an admin only.
	if r := w.s.mustDo(t, http.MethodGet, "/v1/capabilities?all_tenants=true", nil, "Authorization", "Bearer "+capAcme); r.Status != http.StatusForbidden ||
		!strings.Contains(string(r.Body), "all_tenants") {
		t.Errorf("all_tenants with a client token: %d %s, want 403 naming all_tenants", r.Status, r.Body)
	}
	if r := w.s.mustDo(t, http.MethodGet, "/v1/capabilities?all_tenants=maybe", nil, "Authorization", "Bearer "+capAdmin); r.Status != http.StatusBadRequest {
		t.Errorf("all_tenants=maybe: %d %s, want 400", r.Status, r.Body)
	}
	all, body := w.get(t, "/v1/capabilities?all_tenants=true", capAdmin)
	if all.TenantID != "ops" || len(all.Capabilities) != 3 || all.Capabilities[2].Capability != "translate" {
		t.Fatalf("admin's answer %s: want echo, sleep and translate", body)
	}
	ts := all.Capabilities[1].Tenants
	if len(ts) != 2 || ts[0].TenantID != "acme" || ts[0].Queued != 4 || ts[0].InFlight != 1 ||
		ts[1].TenantID != "beta" || ts[1].Queued != 4 || ts[1].QueuedByPriority["1"] != 4 || ts[1].OldestQueuedMS == nil || !ts[1].Throttled {
		t.Errorf("sleep's tenants %s: want acme's 4 queued and 1 in flight, beta's 4 queued at priority 1", mustJSON(t, ts))
	}
	if tr := all.Capabilities[2]; tr.Instances != 0 || tr.Queued != 0 || len(tr.Tenants) != 1 || tr.Tenants[0].Queued != 2 || tr.Tenants[0].Throttled {
		t.Errorf("translate %s: no worker, beta's 2 queued, not throttled (no idle worker)", mustJSON(t, tr))
	}
}
