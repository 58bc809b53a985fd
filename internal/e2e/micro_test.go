package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/events"
)

// `nats micro stats` — the standard tool — tells what the agents did: each
// step is a request of its capability's endpoint, a failed step an error,
// and the time spent running steps the processing time.
func TestNatsMicroStatsCountSteps(t *testing.T) {
	natsCLI(t) // built before the test's deadline starts: a cold build can take a minute
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	// Two sleeps that work and one the agent refuses (ms out of range).
	for i, ms := range []int{20, 30, -1} {
		id := []string{"ok-1", "ok-2", "bad"}[i]
		if err := s.submitSleeps(ctx, id, 1, ms); err != nil {
			t.Fatal(err)
		}
		s.waitEvent(ctx, t, "default", id, func(e events.Envelope) bool { return e.Type.Terminal() })
	}
	out := s.runBlock(ctx, t, "nats micro stats agentbus-sleep --json")
	var stats []struct {
		Name      string `json:"name"`
		Endpoints []struct {
			Name           string `json:"name"`
			NumRequests    int    `json:"num_requests"`
			NumErrors      int    `json:"num_errors"`
			LastError      string `json:"last_error"`
			ProcessingTime int64  `json:"processing_time"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal([]byte(out), &stats); err != nil {
		t.Fatalf("nats micro stats --json: %v\n%s", err, out)
	}
	if len(stats) != 1 || len(stats[0].Endpoints) != 1 {
		t.Fatalf("nats micro stats: want one instance with one endpoint:\n%s", out)
	}
	ep := stats[0].Endpoints[0]
	if ep.Name != "sleep" || ep.NumRequests != 3 || ep.NumErrors != 1 || ep.LastError == "" || ep.ProcessingTime < 50e6 {
		t.Fatalf("sleep endpoint %+v: want 3 requests (steps), 1 error with its message, at least 50ms processing\n%s", ep, out)
	}
	t.Logf("%s", s.runBlock(ctx, t, "nats micro stats agentbus-sleep"))
	for cmd, want := range map[string][]string{
		"nats micro ls":                  {"agentbus-sleep", "agentbus-echo"},
		"nats micro info agentbus-sleep": {"agentbus-agents.sleep", "Waits for the given number"},
	} {
		out := s.runBlock(ctx, t, cmd)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s lacks %q:\n%s", cmd, w, out)
			}
		}
	}
}
