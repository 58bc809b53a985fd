package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus/bustest"
)

// endpointStats is one endpoint of a $SRV.STATS answer, as `nats micro
// stats` reads it.
type endpointStats struct {
	Name                  string          `json:"name"`
	Subject               string          `json:"subject"`
	NumRequests           int             `json:"num_requests"`
	NumErrors             int             `json:"num_errors"`
	LastError             string          `json:"last_error"`
	ProcessingTime        time.Duration   `json:"processing_time"`
	AverageProcessingTime time.Duration   `json:"average_processing_time"`
	Data                  json.RawMessage `json:"data"`
}

// microStats asks $SRV.STATS.<service> over plain NATS, as `nats micro
// stats` does, and returns the endpoints by name. One instance must answer.
func microStats(t *testing.T, nc *nats.Conn, service string) map[string]endpointStats {
	t.Helper()
	m, err := nc.Request("$SRV.STATS."+service, nil, deadline)
	if err != nil {
		t.Fatalf("$SRV.STATS.%s: %v", service, err)
	}
	var stats struct {
		Name      string          `json:"name"`
		Type      string          `json:"type"`
		Endpoints []endpointStats `json:"endpoints"`
	}
	if err := json.Unmarshal(m.Data, &stats); err != nil || stats.Name != service || stats.Type != "io.nats.micro.v1.stats_response" {
		t.Fatalf("$SRV.STATS.%s answered %s (%v)", service, m.Data, err)
	}
	out := map[string]endpointStats{}
	for _, e := range stats.Endpoints {
		out[e.Name] = e
	}
	return out
}

// The micro endpoint stats count the steps each capability ran: requests
// are steps, errors the failed ones (with the last error), processing time
// the time spent running them — per capability, so an agent serving two
// reports each its own.
func TestMicroStatsCountStepsPerCapability(t *testing.T) {
	env := bustest.New(t)
	startOrchestrator(t, env.Bus)
	const work = 20 * time.Millisecond
	twoFaced := funcAgent{
		card: agents.Card{Name: "twofaced", Version: "1.0.0", Capabilities: []string{"steady", "flaky"}, Description: "Two capabilities."},
		handle: func(ctx context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
			// Real work takes time; the processing time must show it.
			timer := time.NewTimer(work)
			defer timer.Stop()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-timer.C:
			}
			if req.Capability == "flaky" {
				return nil, fmt.Errorf("%w: flaky by design", agents.ErrPermanent)
			}
			return okOutput, nil
		},
	}
	startWorker(t, agents.WorkerConfig{Bus: env.Bus, Name: "stats-worker", Agents: []agents.Agent{twoFaced}})
	completed(t, runWorkflow(t, env.Bus, "default", "steady-1", plan(step("A", "steady", nil))))
	completed(t, runWorkflow(t, env.Bus, "default", "steady-2", plan(step("A", "steady", nil), step("B", "steady", nil, "A"))))
	failed(t, runWorkflow(t, env.Bus, "default", "flaky-1", plan(step("A", "flaky", nil))))

	nc, err := nats.Connect(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	eps := microStats(t, nc, "agentbus-twofaced")
	if len(eps) != 2 {
		t.Fatalf("STATS endpoints %+v, want steady and flaky", eps)
	}
	for _, c := range []struct {
		capability       string
		requests, errors int
		lastError        string
	}{
		{"steady", 3, 0, ""},
		{"flaky", 1, 1, "flaky by design"},
	} {
		ep := eps[c.capability]
		if ep.NumRequests != c.requests || ep.NumErrors != c.errors {
			t.Errorf("%s: %d requests, %d errors; want %d steps run, %d failed", c.capability, ep.NumRequests, ep.NumErrors, c.requests, c.errors)
		}
		if (c.lastError == "") != (ep.LastError == "") || !strings.Contains(ep.LastError, c.lastError) {
			t.Errorf("%s: last error %q, want %q", c.capability, ep.LastError, c.lastError)
		}
		if least := time.Duration(c.requests) * work; ep.ProcessingTime < least || ep.AverageProcessingTime != ep.ProcessingTime/time.Duration(c.requests) {
			t.Errorf("%s: processing %s, average %s; want at least %s in all, and the average of %d", c.capability, ep.ProcessingTime, ep.AverageProcessingTime, least, c.requests)
		}
		var data agents.Snapshot
		if err := json.Unmarshal(ep.Data, &data); err != nil || data.Processed != uint64(c.requests) || data.InFlight != 0 {
			t.Errorf("%s: data %s (%v), want the capability's snapshot", c.capability, ep.Data, err)
		}
	}
	// Asking an endpoint for the card is not a step: it does not count.
	if _, err := nc.Request("agentbus-agents.steady", nil, deadline); err != nil && !errors.Is(err, nats.ErrNoResponders) {
		t.Fatal(err)
	}
	if n := microStats(t, nc, "agentbus-twofaced")["steady"].NumRequests; n != 3 {
		t.Errorf("steady: %d requests after a card request, want still 3", n)
	}
}
