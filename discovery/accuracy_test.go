package discovery_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/subjects"
)

// TestGeneratedCards: the benchmark's 500 cards are distinct, and every
// labelled query names an agent that the 50-agent set holds.
func TestGeneratedCards(t *testing.T) {
	all := agentCards(500)
	names, texts, caps := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, c := range all {
		text := discovery.EmbeddingText(c.name, c.capabilities, c.description, c.examples)
		if names[c.name] || texts[text] || caps[c.capabilities[0]] {
			t.Fatalf("card %s repeats a name, a text or a capability", c.name)
		}
		names[c.name], texts[text], caps[c.capabilities[0]] = true, true, true
		if strings.Contains(text, "%!") {
			t.Fatalf("card %s has a bad template: %q", c.name, text)
		}
	}
	if len(names) != 500 {
		t.Fatalf("%d cards, want 500", len(names))
	}
	if len(routingQueries) < 40 {
		t.Fatalf("%d labelled queries, want at least 40", len(routingQueries))
	}
	small := map[string]bool{}
	for _, c := range agentCards(50) {
		small[c.name] = true
	}
	if len(small) != 50 {
		t.Fatalf("the small set has %d agents, want 50", len(small))
	}
	for _, q := range routingQueries {
		if !small[q.want] {
			t.Errorf("query %q wants %s, which is not among the 50 agents", q.query, q.want)
		}
	}
}

// TestDiscoverMatchesLinearScan: over 500 registered agents, the index
// returns, for every labelled query, exactly the top 5 of the old linear
// scan of the bucket (every instance is healthy and idle, so ranks are
// scores).
func TestDiscoverMatchesLinearScan(t *testing.T) {
	env, reg := newRegistry(t)
	registerCards(t, reg, agentCards(500))
	waitAgents(t, reg, 500)
	kv, err := env.Bus.KV(t.Context(), subjects.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range routingQueries {
		// a deadline per query: the linear scan lists 500 keys each time,
		// which under -race on a loaded machine takes seconds
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		defer cancel()
		got, err := reg.Discover(ctx, q.query, 5)
		if err != nil {
			t.Fatal(err)
		}
		want, err := linearDiscover(ctx, kv, llm.LocalEmbedder{}, q.query, 5)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(matchNames(got), matchNames(want)) {
			t.Errorf("%q: index %v, linear scan %v", q.query, matchNames(got), matchNames(want))
			continue
		}
		for i := range got {
			if d := got[i].Score - want[i].Score; d > 1e-5 || d < -1e-5 || got[i].Rank != got[i].Score {
				t.Errorf("%q: match %d score %g rank %g, linear scan's score %g", q.query, i, got[i].Score, got[i].Rank, want[i].Score)
			}
		}
	}
}
