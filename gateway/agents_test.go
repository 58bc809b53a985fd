package gateway_test

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/llm"
)

// TestAgentsQueryRanksFromTheSharedIndex: GET /v1/agents?query= answers
// from the registry it was given, with live counts, and ranks the idle of
// two agents that fit a query equally ahead of the busy one.
func TestAgentsQueryRanksFromTheSharedIndex(t *testing.T) {
	env := bustest.New(t)
	reg, err := discovery.New(t.Context(), env.Bus, llm.LocalEmbedder{Dim: 128})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	now := time.Now().UTC()
	for _, a := range []struct {
		name     string
		inFlight int64
	}{{"busy-translator", 4}, {"idle-translator", 0}} {
		text := "translates text into french"
		r := discovery.Registration{Instance: a.name + "-1", Worker: "w", Name: a.name, Version: "1.0.0", Description: text,
			Capabilities: []string{"translate"}, PID: os.Getpid(), StartedAt: now, HeartbeatAt: now,
			HeartbeatMS: time.Hour.Milliseconds(), SelfHealthy: true, InFlight: a.inFlight,
			Embedder: "another-embedder", EmbeddingText: text} // embedded again by the registry's
		if err := reg.Put(t.Context(), r, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	s := startGateway(t, env, func(c *gateway.Config) { c.Registry = reg })
	r := s.mustDo(t, http.MethodGet, "/v1/agents?query=translate+into+french&k=2", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var out struct {
		Embedder string            `json:"embedder"`
		Matches  []discovery.Match `json:"matches"`
	}
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatal(err)
	}
	if out.Embedder != "local-hash-128" {
		t.Errorf("embedder %q, want the registry's, local-hash-128", out.Embedder)
	}
	if len(out.Matches) != 2 || out.Matches[0].Name != "idle-translator" || out.Matches[1].Name != "busy-translator" {
		t.Fatalf("matches %+v: want the idle translator first", out.Matches)
	}
	busy := out.Matches[1]
	if busy.Score != out.Matches[0].Score || busy.Rank >= busy.Score || busy.InFlight != 4 || busy.Load != 4 || busy.Healthy != 1 {
		t.Errorf("busy match %+v: want the same score, a lower rank, 4 in flight", busy)
	}
}
