package orchestrator_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/workflow"
)

// seedCapabilities are the built-in capabilities of the seed system's flows.
var seedCapabilities = []string{
	orchestrator.CapabilityEntityExtraction, orchestrator.CapabilityProfileSelection, orchestrator.CapabilityQueryEnhancement,
	orchestrator.CapabilitySearch, orchestrator.CapabilitySummarize, orchestrator.CapabilityDetailedReport,
}

// agentsFor makes one registered agent per capability, ranked as given,
// with score 0 (no semantic match).
func agentsFor(capabilities ...string) []discovery.Match {
	out := make([]discovery.Match, len(capabilities))
	for i, c := range capabilities {
		out[i] = discovery.Match{Name: c + "-agent", Description: "does " + c, Capabilities: []string{c}, Instances: 1, Healthy: 1}
	}
	return out
}

// shape renders a plan as "id<-dep+dep" per step, for comparisons.
func shape(p events.Plan) []string {
	out := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		out[i] = s.ID + ":" + s.Capability
		if len(s.DependsOn) > 0 {
			out[i] += "<-" + strings.Join(s.DependsOn, "+")
		}
	}
	return out
}

func inputOf(t *testing.T, p events.Plan, id string) map[string]any {
	t.Helper()
	for _, s := range p.Steps {
		if s.ID == id {
			var in map[string]any
			if err := json.Unmarshal(s.Input, &in); err != nil {
				t.Fatalf("step %s input %s: %v", id, s.Input, err)
			}
			return in
		}
	}
	t.Fatalf("no step %s in %v", id, shape(p))
	return nil
}

var (
	simpleShape  = []string{"entity_extraction:entity_extraction", "search:search<-entity_extraction", "summarize:summarize<-search"}
	complexShape = []string{"profile_selection:profile_selection", "entity_extraction:entity_extraction",
		"query_enhancement:query_enhancement", "search:search<-profile_selection+entity_extraction+query_enhancement",
		"detailed_report:detailed_report<-search"}
)

func TestHeuristicPlanner(t *testing.T) {
	all := agentsFor(append([]string{"echo"}, seedCapabilities...)...)
	simpleOnly := agentsFor("echo", "entity_extraction", "search", "summarize")
	semantic := agentsFor("translate", "echo")
	semantic[0].Score, semantic[1].Score = 0.4, 0.1
	weak := agentsFor("translate", "echo")
	weak[0].Score, weak[1].Score = 0.01, 0.0
	cases := []struct {
		name, query string
		agents      []discovery.Match
		want        []string
		says        []string
	}{
		{"simple flow", "what is kubernetes", all, simpleShape,
			[]string{"heuristic planner: simple query: entity_extraction → search → summarize"}},
		{"complex flow", "compare raft and paxos", all, complexShape,
			[]string{`heuristic planner: complex query (asks for analysis: "compare"): `, "[profile_selection ∥ entity_extraction ∥ query_enhancement] → search (ensemble) → detailed_report"}},
		{"complex query, simple flow only", "compare raft and paxos", simpleOnly, simpleShape,
			[]string{"complex flow lacks profile_selection, query_enhancement, detailed_report", "entity_extraction → search → summarize"}},
		{"a named capability outside the flows wins", "echo hello", all, []string{"echo:echo"},
			[]string{"routed to echo: the query names it"}},
		{"a named flow capability does not break the flow", "search the docs for raft", all, simpleShape, nil},
		{"no flow: named capability", "run entity extraction on this", agentsFor("echo", "entity_extraction"),
			[]string{"entity_extraction:entity_extraction"}, []string{"no flow (search, summarize not registered)", "routed to entity_extraction: the query names it"}},
		{"no flow: semantic discovery", "bonjour tout le monde", semantic, []string{"translate:translate"},
			[]string{"routed to translate by semantic discovery (agent translate-agent, similarity 0.40, embedder local-hash-256)"}},
		{"no flow: below the floor", "bonjour tout le monde", weak, []string{"echo:echo"},
			[]string{"routed to echo: no agent matches the query"}},
		{"nothing registered", "compare raft and paxos", nil, []string{"echo:echo"},
			[]string{"no flow (profile_selection, entity_extraction, query_enhancement, search, detailed_report not registered)", "no agent is registered"}},
	}
	h := orchestrator.HeuristicPlanner{MinScore: 0.05, Embedder: "local-hash-256"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, why, err := h.Plan(t.Context(), c.query, c.agents)
			if err != nil {
				t.Fatal(err)
			}
			if got := shape(p); !slices.Equal(got, c.want) {
				t.Fatalf("plan %v, want %v (%s)", got, c.want, why)
			}
			for _, s := range c.says {
				if !strings.Contains(why, s) {
					t.Errorf("explanation %q does not say %q", why, s)
				}
			}
			if strings.Contains(why, "\n") {
				t.Errorf("explanation is not one line: %q", why)
			}
			if _, err := workflow.Stages(p); err != nil {
				t.Fatalf("plan fails Stages: %v", err)
			}
			for _, s := range p.Steps {
				if q := inputOf(t, p, s.ID)["query"]; q != c.query {
					t.Errorf("step %s input query %v, want %q", s.ID, q, c.query)
				}
			}
		})
	}
}

func TestHeuristicFlowsStagesAndEnsemble(t *testing.T) {
	h := orchestrator.HeuristicPlanner{}
	all := agentsFor(seedCapabilities...)

	p, _, _ := h.Plan(t.Context(), "analyze the impact of rate limits", all)
	stages, err := workflow.Stages(p)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"profile_selection", "entity_extraction", "query_enhancement"}, {"search"}, {"detailed_report"}}
	if len(stages) != 3 || !slices.Equal(stages[0], want[0]) || !slices.Equal(stages[1], want[1]) || !slices.Equal(stages[2], want[2]) {
		t.Fatalf("complex stages %v, want %v", stages, want)
	}
	if in := inputOf(t, p, "search"); in["ensemble"] != true {
		t.Fatalf("complex search input %v lacks ensemble", in)
	}
	if in := inputOf(t, p, "profile_selection"); in["ensemble"] != nil {
		t.Fatalf("only search is marked ensemble: %v", in)
	}
	for _, s := range p.Steps {
		// the planning steps are optional: search runs without a failed one
		if planning := slices.Contains(want[0], s.ID); s.Optional != planning {
			t.Errorf("complex flow step %s optional %v, want %v", s.ID, s.Optional, planning)
		}
	}

	p, _, _ = h.Plan(t.Context(), "what is raft", all)
	if stages, err = workflow.Stages(p); err != nil || len(stages) != 3 {
		t.Fatalf("simple stages %v, %v", stages, err)
	}
	if in := inputOf(t, p, "search"); in["ensemble"] != nil {
		t.Fatalf("simple search input %v is marked ensemble", in)
	}
}

// TestHeuristicFlowsWithMemory: with a memory agent registered, both flows
// gain an optional memory step that runs with the first steps and that the
// answer step waits for.
func TestHeuristicFlowsWithMemory(t *testing.T) {
	h := orchestrator.HeuristicPlanner{}
	all := agentsFor(append(slices.Clone(seedCapabilities), orchestrator.CapabilityMemory)...)
	for _, c := range []struct {
		query, last string
		want        []string
	}{
		{"what is the capital of France", "summarize", []string{"entity_extraction:entity_extraction", "search:search<-entity_extraction",
			"summarize:summarize<-search+memory", "memory:memory"}},
		{"compare the trade-offs of bm25 and vector search in detail", "detailed_report", nil},
	} {
		p, why, err := h.Plan(t.Context(), c.query, all)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(why, "(with memory)") {
			t.Errorf("%q: explanation %q does not mention memory", c.query, why)
		}
		if c.want != nil && !slices.Equal(shape(p), c.want) {
			t.Errorf("%q: plan %v, want %v", c.query, shape(p), c.want)
		}
		mem := p.Steps[len(p.Steps)-1]
		if mem.ID != "memory" || !mem.Optional || len(mem.DependsOn) != 0 {
			t.Errorf("%q: memory step %+v: want optional, no dependencies", c.query, mem)
		}
		for _, s := range p.Steps {
			if s.ID == c.last && !slices.Contains(s.DependsOn, "memory") {
				t.Errorf("%q: %s does not wait for memory: %v", c.query, s.ID, s.DependsOn)
			}
		}
		if got := inputOf(t, p, "memory")["query"]; got != c.query {
			t.Errorf("%q: memory input query %v", c.query, got)
		}
	}
	// Without memory the flows are unchanged.
	p, _, _ := h.Plan(t.Context(), "what is the capital of France", agentsFor(seedCapabilities...))
	if !slices.Equal(shape(p), simpleShape) {
		t.Errorf("without memory: %v, want %v", shape(p), simpleShape)
	}
}
