package orchestrator_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/orchestrator"
)

// registerFillers registers 50 agents that no worker serves, whose cards
// all mention JetStream, so that they, not the built-in flows' agents,
// fit a query about JetStream best.
func registerFillers(t *testing.T, env *bustest.Env) *discovery.Registry {
	t.Helper()
	reg, err := discovery.New(t.Context(), env.Bus, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	topics := []string{"streams", "consumers", "mirrors", "sources", "snapshots", "quotas", "accounts", "subjects", "headers", "leaders"}
	verbs := []string{"inspect", "repair", "migrate", "audit", "tune"}
	now := time.Now().UTC()
	for i := range 50 {
		topic, verb := topics[i%len(topics)], verbs[i/len(topics)]
		name := fmt.Sprintf("jetstream-%s-%s", topic, verb)
		capability := fmt.Sprintf("%s_jetstream_%s", verb, topic)
		desc := fmt.Sprintf("Helps %s JetStream %s: what jetstream %s are and how to %s them.", verb, topic, topic, verb)
		text := discovery.EmbeddingText(name, []string{capability}, desc, nil)
		vs, err := llm.LocalEmbedder{}.Embed(t.Context(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		r := discovery.Registration{Instance: name + "-1", Worker: "fillers", Name: name, Version: "1.0.0", Description: desc,
			Capabilities: []string{capability}, PID: os.Getpid(), StartedAt: now, HeartbeatAt: now,
			HeartbeatMS: time.Hour.Milliseconds(), SelfHealthy: true,
			Embedder: llm.LocalEmbedder{}.Name(), EmbeddingText: text, Embedding: vs[0]}
		if err := reg.Put(t.Context(), r, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// seedStubs are the built-in flows' capabilities, served by stubs.
func seedStubs() []agents.Agent {
	var out []agents.Agent
	for _, c := range seedCapabilities {
		out = append(out, stub{c})
	}
	return out
}

// TestLLMPlannerPromptHoldsOnlyTheTopCards: with 57 agents registered, the
// model is told about the 5 that best fit the query — the ones Discover
// returns — and no other; its plan may still use a capability served
// outside them (echo).
func TestLLMPlannerPromptHoldsOnlyTheTopCards(t *testing.T) {
	m := newFakeModel(t, false, answers(`{"steps":[{"id":"echo","capability":"echo"}]}`))
	env := startPlanning(t, &orchestrator.LLMPlanner{Chat: m.chat(t)}, seedStubs()...)
	reg := registerFillers(t, env)
	const query = "what are jetstream mirrors and how do I audit them"
	all, err := reg.Catalog(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 57 {
		t.Fatalf("catalog of %d agents, want the 50 fillers, echo and 6 stubs", len(all))
	}
	top, err := reg.Discover(t.Context(), query, discovery.DefaultK)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, a := range top {
		want = append(want, a.Name)
	}
	slices.Sort(want)

	submit(t, env.Bus, "default", "top-cards", events.WorkflowSubmitted{Query: query})
	completed(t, collect(t, env.Bus, "default", "top-cards"))
	reqs := m.got()
	if len(reqs) != 1 {
		t.Fatalf("the model was asked %d times, want once", len(reqs))
	}
	prompt := reqs[0].Messages[0].Content
	var got []string
	for _, sm := range regexp.MustCompile(`(?m)^- \S+ \(agent (\S+)\): `).FindAllStringSubmatch(prompt, -1) {
		got = append(got, sm[1])
	}
	slices.Sort(got)
	got = slices.Compact(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the prompt describes agents %v, want the top %d %v:\n%s", got, discovery.DefaultK, want, prompt)
	}
	if !strings.Contains(want[0], "jetstream-") {
		t.Fatalf("top agents %v should be fillers about JetStream", want)
	}
	for _, a := range all {
		if !slices.Contains(want, a.Name) && strings.Contains(prompt, a.Name) {
			t.Errorf("the prompt names %s, which is not among the top %d", a.Name, discovery.DefaultK)
		}
	}
}

// TestHeuristicPlannerSeesEveryCapabilityBeyondTheTopCards: the built-in
// flows' agents are not among the top cards for a query about JetStream,
// yet the heuristic planner still plans the simple flow, because every
// live agent's capabilities reach it after the top cards.
func TestHeuristicPlannerSeesEveryCapabilityBeyondTheTopCards(t *testing.T) {
	var mu sync.Mutex
	var seen []discovery.Match
	recording := orchestrator.PlannerFunc(func(ctx context.Context, query string, agents []discovery.Match) (events.Plan, string, error) {
		mu.Lock()
		seen = slices.Clone(agents)
		mu.Unlock()
		return orchestrator.HeuristicPlanner{}.Plan(ctx, query, agents)
	})
	env := startPlanning(t, recording, seedStubs()...)
	registerFillers(t, env)

	submit(t, env.Bus, "default", "flow", events.WorkflowSubmitted{Query: "what is jetstream"})
	rs := collect(t, env.Bus, "default", "flow")
	completed(t, rs)
	if why := planned(t, rs); !strings.HasSuffix(why, "heuristic planner: simple query: entity_extraction → search → summarize") {
		t.Fatalf("status %q: want the simple flow", why)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 57 {
		t.Fatalf("the planner saw %d agents, want every live one (57)", len(seen))
	}
	for i, a := range seen {
		top := i < discovery.DefaultK
		switch {
		case top && (a.Description == "" || a.Score <= 0 || !strings.HasPrefix(a.Name, "jetstream-")):
			t.Errorf("agent %d %+v: want a JetStream filler with its card and a score", i, a)
		case !top && (a.Description != "" || a.Examples != nil || a.Score != 0 || len(a.Capabilities) == 0):
			t.Errorf("agent %d %+v: past the top %d, want its capabilities without its card or a score", i, a, discovery.DefaultK)
		}
	}
}
