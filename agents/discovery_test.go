package agents_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/llm"
)

func translator() funcAgent {
	a := newAgent("translator", func(_ context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
		return req.Input, nil
	})
	a.card.Capabilities = []string{"translate"}
	a.card.Description = "Translates text between languages."
	a.card.Examples = []string{"translate this to French", "how do you say hello in German"}
	return a
}

func TestDiscoverRanksRegisteredAgentsByQuery(t *testing.T) {
	env := bustest.New(t)
	reg := openRegistry(t, env.Bus)
	startWorker(t, agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{echo.Agent{}, sleep.Agent{}, translator()}})

	// A stale registration whose text is the query itself would win, were
	// unreachable instances not left out.
	const query = "translate hello into french"
	stale := discovery.Registration{
		Instance: "ghost-1", Worker: "ghost", Name: "ghost-translator", Version: "9.9.9",
		Description: query, Capabilities: []string{"ghost"}, SelfHealthy: true,
		HeartbeatMS: 1000, HeartbeatAt: time.Now().Add(-time.Minute), EmbeddingText: query,
		Embedder: llm.LocalEmbedder{}.Name(),
	}
	vs, _ := llm.LocalEmbedder{}.Embed(t.Context(), []string{query})
	stale.Embedding = vs[0]
	if err := reg.Put(t.Context(), stale, time.Minute); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		k         int
		wantNames []string // a prefix of the ranking
		wantLen   int
	}{
		{k: 2, wantNames: []string{"translator"}, wantLen: 2},
		{k: 1, wantNames: []string{"translator"}, wantLen: 1},
		{k: 10, wantNames: []string{"translator"}, wantLen: 3},
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		got, err := reg.Discover(ctx, query, c.k)
		cancel()
		if err != nil {
			t.Fatalf("Discover k=%d: %v", c.k, err)
		}
		if len(got) != c.wantLen {
			t.Fatalf("Discover k=%d returned %d matches, want %d: %+v", c.k, len(got), c.wantLen, got)
		}
		for i, name := range c.wantNames {
			if got[i].Name != name {
				t.Fatalf("Discover k=%d: match %d is %q, want %q: %+v", c.k, i, got[i].Name, name, got)
			}
		}
		for i, m := range got {
			if m.Name == "ghost-translator" {
				t.Errorf("Discover k=%d returned the unreachable instance", c.k)
			}
			if i > 0 && m.Score > got[i-1].Score {
				t.Errorf("Discover k=%d: scores not descending: %+v", c.k, got)
			}
		}
		top := got[0]
		if top.Instances != 1 || top.Healthy != 1 || top.Capabilities[0] != "translate" || top.Score <= 0 {
			t.Errorf("top match %+v: want one healthy instance offering translate with a positive score", top)
		}
		if c.wantLen > 1 && top.Score <= got[1].Score {
			t.Errorf("translator does not outscore %s: %v vs %v", got[1].Name, top.Score, got[1].Score)
		}
	}
	// The stale instance is listed (as unreachable) but never discovered.
	var found bool
	for _, in := range instances(t, reg) {
		if in.Name == "ghost-translator" {
			found = true
			if in.Health != discovery.Unreachable {
				t.Errorf("stale instance health %s, want unreachable", in.Health)
			}
		}
	}
	if !found {
		t.Error("the stale registration is not listed")
	}
}
