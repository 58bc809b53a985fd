package agents_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus/bustest"
)

// TestWorkerIsANATSMicroService asks the worker what standard NATS tooling
// would ask ($SRV.PING/INFO/STATS), over a plain nats.go connection.
func TestWorkerIsANATSMicroService(t *testing.T) {
	env := bustest.New(t)
	startOrchestrator(t, env.Bus)
	startWorker(t, agents.WorkerConfig{Bus: env.Bus, Name: "micro-worker", Agents: []agents.Agent{echo.Agent{}}})
	in, ok := instanceOf(t, openRegistry(t, env.Bus), "echo")
	if !ok {
		t.Fatal("echo is not registered")
	}
	// One step processed, so the stats have something to say.
	completed(t, runWorkflow(t, env.Bus, "default", "one", plan(step("A", echo.Capability, "hi"))))

	nc, err := nats.Connect(env.URL, nats.Name("micro-test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	request := func(subject string, v any) {
		t.Helper()
		msg, err := nc.Request(subject, nil, 10*time.Second)
		if err != nil {
			t.Fatalf("request %s: %v", subject, err)
		}
		if msg.Header.Get("Nats-Service-Error") != "" {
			t.Fatalf("request %s: service error %q", subject, msg.Header.Get("Nats-Service-Error"))
		}
		if err := json.Unmarshal(msg.Data, v); err != nil {
			t.Fatalf("request %s: %v in %s", subject, err, msg.Data)
		}
	}

	var ping struct{ Name, ID, Version, Type string }
	request("$SRV.PING.agentbus-echo", &ping)
	if ping.Name != "agentbus-echo" || ping.Version != "1.0.0" || ping.ID != in.ServiceID || ping.Type != "io.nats.micro.v1.ping_response" {
		t.Errorf("PING = %+v, want agentbus-echo 1.0.0 with the registered service id %q", ping, in.ServiceID)
	}

	type endpoint struct {
		Name, Subject string
		Metadata      map[string]string
		NumRequests   int `json:"num_requests"`
		Data          json.RawMessage
	}
	var info struct {
		Name, Description string
		Metadata          map[string]string
		Endpoints         []endpoint
	}
	request("$SRV.INFO.agentbus-echo", &info)
	i := slices.IndexFunc(info.Endpoints, func(e endpoint) bool { return e.Subject == "agentbus-agents.echo" })
	if info.Name != "agentbus-echo" || i < 0 || info.Endpoints[i].Metadata["capability"] != "echo" {
		t.Errorf("INFO = %+v, want agentbus-echo with endpoint subject agentbus-agents.echo", info)
	}
	if info.Description != (echo.Agent{}).Card().Description || info.Metadata["worker"] != "micro-worker" || info.Metadata["instance"] != in.Instance {
		t.Errorf("INFO description %q metadata %v: want the card's description, worker and instance", info.Description, info.Metadata)
	}

	var card struct {
		agents.Card
		Instance string
		Stats    agents.Snapshot
	}
	request("agentbus-agents.echo", &card)
	if card.Name != "echo" || !slices.Equal(card.Capabilities, []string{"echo"}) || card.Instance != in.Instance {
		t.Errorf("card = %+v, want echo with capabilities [echo] and instance %q", card, in.Instance)
	}
	if card.Stats.Processed != 1 || card.Stats.Errors != 0 || card.Stats.InFlight != 0 {
		t.Errorf("card stats = %+v, want one step processed without error", card.Stats)
	}

	// STATS counts steps — what the endpoint stands for — not the card
	// requests above; and as natscli reads it.
	var stats struct {
		Name      string
		Endpoints []endpoint
	}
	request("$SRV.STATS.agentbus-echo", &stats)
	if len(stats.Endpoints) != 1 || stats.Endpoints[0].NumRequests != 1 {
		t.Fatalf("STATS = %+v, want one endpoint with one request (the step)", stats)
	}
	if stats.Name != "agentbus-echo" {
		t.Errorf("STATS name %q, want agentbus-echo", stats.Name)
	}
	var data agents.Snapshot
	if err := json.Unmarshal(stats.Endpoints[0].Data, &data); err != nil || data.Processed != 1 {
		t.Errorf("STATS data = %s (%v), want the agent's snapshot with one step processed", stats.Endpoints[0].Data, err)
	}
}
