package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/compose"
	"github.com/agentbus/agentbus/agents/search"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
)

// brokenPlanner is an entity extraction agent whose model is down: every
// run fails for good.
type brokenPlanner struct{}

func (brokenPlanner) Card() agents.Card {
	return agents.Card{Name: "entities-down", Version: "1.0.0", Capabilities: []string{"entity_extraction"},
		Description: "Entity extraction whose model is unreachable."}
}

func (brokenPlanner) Handle(context.Context, agents.Request, agents.Emitter) (json.RawMessage, error) {
	return nil, fmt.Errorf("%w: model unreachable", agents.ErrPermanent)
}

// consumersDoc is the one document the answer tests search.
var consumersDoc = retrieval.Document{ID: "consumers", Title: "Consumers", Source: "docs/consumers.md",
	Text: "A durable consumer acknowledges every message it processes. Unacknowledged messages are redelivered after the ack wait."}

// indexed is an embedded index holding docs for the default tenant.
func indexed(t *testing.T, docs ...retrieval.Document) *embedded.Index {
	t.Helper()
	ix, err := embedded.Open(embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	ch, err := retrieval.NewChunker(retrieval.ChunkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if err := ix.Index(t.Context(), gateway.DefaultTenant, ch.Chunk(d)); err != nil {
			t.Fatal(err)
		}
	}
	return ix
}

// TestAnswerSurvivesAFailedPlanningAgent: the built-in flow's planning
// agent fails after its retries; search runs without it, and the answer,
// cited from the index, says what was missing.
func TestAnswerSurvivesAFailedPlanningAgent(t *testing.T) {
	ix := indexed(t, consumersDoc)
	sa, err := search.New(search.Config{Backend: ix})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := compose.New(compose.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := startStackWith(t, stackOptions{agents: []agents.Agent{brokenPlanner{}, sa, ca}})

	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	body := `{"workflow_id":"degraded","query":"how does a consumer acknowledge messages"}`
	resp, err := http.Post(s.base()+"/v1/workflows", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: %s", resp.Status)
	}
	var end events.Envelope
	err = s.env.Bus.Follow(ctx, gateway.DefaultTenant, "degraded", 0, func(_ context.Context, r bus.Record) error {
		if r.Envelope.Type.Terminal() {
			end = r.Envelope
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if end.Type != events.TypeComplete {
		t.Fatalf("workflow ended %s: %s", end.Type, end.Data)
	}
	var c events.Complete
	var out compose.Output
	if err := end.Unmarshal(&c); err != nil || json.Unmarshal(c.Result, &out) != nil {
		t.Fatalf("complete %s", end.Data)
	}
	if c.Outputs["entity_extraction"] == nil || string(c.Outputs["entity_extraction"]) != "null" {
		t.Fatalf("entity_extraction output %s, want null (failed)", c.Outputs["entity_extraction"])
	}
	if !strings.Contains(out.Answer, "acknowledges every message") || len(out.Citations) == 0 || out.Citations[0].DocID != "consumers" {
		t.Fatalf("no cited answer: %q %+v", out.Answer, out.Citations)
	}
	if !strings.Contains(out.Answer, "the entity_extraction step failed") || !strings.Contains(out.Answer, "model unreachable") {
		t.Fatalf("answer does not say what failed:\n%s", out.Answer)
	}
}
