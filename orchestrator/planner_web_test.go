package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/workflow"
)

var webCapabilities = []string{orchestrator.CapabilityWebSearch, orchestrator.CapabilitySelect, orchestrator.CapabilityIngest}

func TestWebAsksForCurrent(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  bool
	}{
		{"what is the latest NATS release", true},
		{"NATS news", true},
		{"what happened today in Go", true},
		{"Today's headlines about JetStream", true},
		{"what changed this week in nats.go", true},
		{"find this on the web: jetstream batch publish", true},
		{"what did the 2026 roadmap say", true},
		{"plans for 2031", true},
		{"what did the 2019 roadmap say", false},
		{"how do consumers acknowledge messages", false},
		{"how does the weekly report work", false},
		{"explain web sockets in the gateway", false},
	} {
		if got, why := orchestrator.AsksForCurrent(tc.query, 2026); got != tc.want {
			t.Errorf("AsksForCurrent(%q) = %v (%s), want %v", tc.query, got, why, tc.want)
		}
	}
}

func TestWebPlannerPlansTheWebGraphBesideTheFlow(t *testing.T) {
	h := orchestrator.HeuristicPlanner{Year: 2026}
	all := agentsFor(append(slices.Clone(seedCapabilities), webCapabilities...)...)
	t.Run("simple flow with the web graph", func(t *testing.T) {
		p, why, err := h.Plan(context.Background(), "what is the latest NATS release", all)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"web_search:web_search", "select:select<-web_search", "ingest:ingest<-select",
			"entity_extraction:entity_extraction", "search:search<-entity_extraction", "summarize:summarize<-search+select"}
		if !slices.Equal(shape(p), want) {
			t.Fatalf("plan %v, want %v", shape(p), want)
		}
		if !strings.Contains(why, "web_search → select (approval) → ingest") || !strings.Contains(why, "latest") {
			t.Fatalf("explanation %q", why)
		}
		for _, s := range p.Steps {
			if got := s.RequiresApproval; got != (s.ID == "select") {
				t.Errorf("step %s requires_approval %v", s.ID, got)
			}
			if s.Optional != (s.ID == "ingest" || s.ID == "entity_extraction") {
				t.Errorf("step %s optional %v", s.ID, s.Optional)
			}
		}
		if _, err := workflow.Stages(p); err != nil {
			t.Fatal(err)
		}
		if inputOf(t, p, "web_search")["query"] != "what is the latest NATS release" {
			t.Fatal("web_search has not the query")
		}
	})
	t.Run("complex flow with the web graph", func(t *testing.T) {
		p, _, _ := h.Plan(context.Background(), "compare the latest NATS and Kafka releases and explain the trade-offs", all)
		last := p.Steps[len(p.Steps)-1]
		if p.Steps[0].ID != "web_search" || last.ID != "detailed_report" || !slices.Contains(last.DependsOn, "select") {
			t.Fatalf("plan %v", shape(p))
		}
	})
	t.Run("not for a question about the documents", func(t *testing.T) {
		p, _, _ := h.Plan(context.Background(), "how do consumers acknowledge messages", all)
		if !slices.Equal(shape(p), simpleShape) {
			t.Fatalf("plan %v", shape(p))
		}
	})
	t.Run("never without a registered web_search agent", func(t *testing.T) {
		offline := agentsFor(append(slices.Clone(seedCapabilities), orchestrator.CapabilitySelect, orchestrator.CapabilityIngest)...)
		p, _, _ := h.Plan(context.Background(), "what is the latest NATS news", offline)
		for _, s := range p.Steps {
			if s.Capability == orchestrator.CapabilityWebSearch || s.Capability == orchestrator.CapabilitySelect {
				t.Fatalf("offline plan has %s: %v", s.Capability, shape(p))
			}
		}
	})
	t.Run("naming web search asks for the graph, select alone is never routed to", func(t *testing.T) {
		p, _, _ := h.Plan(context.Background(), "do a web search for the jetstream roadmap", all)
		if len(p.Steps) != 6 || p.Steps[0].ID != "web_search" {
			t.Fatalf("plan %v", shape(p))
		}
		p, _, _ = h.Plan(context.Background(), "select the best option", agentsFor(orchestrator.CapabilitySelect, "echo"))
		if len(p.Steps) != 1 || p.Steps[0].Capability == orchestrator.CapabilitySelect {
			t.Fatalf("plan %v", shape(p))
		}
	})
	t.Run("with memory", func(t *testing.T) {
		p, _, _ := h.Plan(context.Background(), "latest NATS news", append(all, agentsFor(orchestrator.CapabilityMemory)...))
		answer := p.Steps[5]
		if answer.ID != "summarize" || fmt.Sprint(answer.DependsOn) != "[search select memory]" || p.Steps[6].ID != "memory" {
			t.Fatalf("plan %v", shape(p))
		}
	})
}

func TestWebAutoIngestMetadataLiftsTheApproval(t *testing.T) {
	s := startStack(t, newFn("entity_extraction", echoFn), newFn("search", echoFn), newFn("summarize", echoFn),
		newFn("web_search", echoFn), newFn("select", echoFn), newFn("ingest", echoFn))
	t.Run("auto", func(t *testing.T) {
		submit(t, s.env.Bus, "default", "webauto", events.WorkflowSubmitted{Query: "latest news about NATS",
			Metadata: map[string]string{orchestrator.MetadataAutoIngest: "true"}})
		rs := collect(t, s.env.Bus, "default", "webauto")
		if end := last(t, rs); end.Type != events.TypeComplete {
			t.Fatalf("ended %s: %s", end.Type, describe(rs))
		}
		cp, err := s.orch.Checkpoint(t.Context(), "default", "webauto")
		if err != nil {
			t.Fatal(err)
		}
		if len(cp.Plan.Steps) != 6 || cp.Tasks["ingest"].Status != events.StateCompleted {
			t.Fatalf("plan %v, ingest %s", shape(cp.Plan), cp.Tasks["ingest"].Status)
		}
		for _, st := range cp.Plan.Steps {
			if st.RequiresApproval {
				t.Fatalf("step %s still requires approval", st.ID)
			}
		}
	})
	t.Run("default waits", func(t *testing.T) {
		submit(t, s.env.Bus, "default", "webwait", events.WorkflowSubmitted{Query: "latest news about NATS"})
		waitFor(t, "select awaits approval", func() bool {
			cp, err := s.orch.Checkpoint(t.Context(), "default", "webwait")
			return err == nil && cp.Status == events.StateInputRequired && cp.Tasks["select"].Approval != nil
		})
		cp, _ := s.orch.Checkpoint(t.Context(), "default", "webwait")
		if cp.Tasks["ingest"].Status != events.StateSubmitted {
			t.Fatalf("ingest is %s before the approval", cp.Tasks["ingest"].Status)
		}
	})
}

func echoFn(_ context.Context, req agents.Request) (json.RawMessage, error) {
	return json.Marshal(req.StepID)
}
