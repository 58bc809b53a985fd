package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/memory"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/subjects"
)

// bucket starts a real JetStream server and opens the memory bucket.
func bucket(t *testing.T) *bus.KV {
	t.Helper()
	env := bustest.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	kv, err := env.Bus.KV(ctx, subjects.BucketMemory)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func newAgent(t *testing.T, cfg memory.Config) *memory.Agent {
	t.Helper()
	a, err := memory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func ask(t *testing.T, a *memory.Agent, tenant, input string) memory.Output {
	t.Helper()
	out, _ := kittest.Run[memory.Output](t, a, agentkit.OutputSchema(memory.Capability), agents.Request{TenantID: tenant,
		WorkflowID: "w1", StepID: "memory", Capability: "memory", Attempt: 1, Delivery: 1, Input: json.RawMessage(input)})
	return out
}

func objects(fs []memory.Fact) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Predicate+"="+f.Object)
	}
	slices.Sort(out)
	return out
}

func TestRememberIsIdempotent(t *testing.T) {
	kv := bucket(t)
	a := newAgent(t, memory.Config{KV: kv})
	first := ask(t, a, "acme", `{"query":"I work with Go and I live in Berlin.","mode":"remember"}`)
	if got := objects(first.Stored); !slices.Equal(got, []string{"lives_in=berlin", "works_with=go"}) {
		t.Fatalf("stored %q", got)
	}
	if len(first.Recalled) != 0 || first.Mode != memory.ModeRemember {
		t.Fatalf("remember mode recalled %v", first.Recalled)
	}
	again := ask(t, a, "acme", `{"query":"i WORK with go!","mode":"remember"}`)
	if len(again.Stored) != 0 || len(again.Known) != 1 || again.Known[0].Key != first.Stored[1].Key && again.Known[0].Key != first.Stored[0].Key {
		t.Fatalf("second telling stored %v known %v", again.Stored, again.Known)
	}
	entries, err := kv.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("%d keys stored, want 2", len(entries))
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Key, "acme.") {
			t.Fatalf("key %q lacks the tenant prefix", e.Key)
		}
	}
}

func TestTenantsNeverSeeEachOther(t *testing.T) {
	kv := bucket(t)
	a := newAgent(t, memory.Config{KV: kv, RecallLimit: 2})
	ask(t, a, "acme", `{"query":"My name is Ada. I work at Acme. I like Go. I prefer tabs."}`)
	ask(t, a, "globex", `{"query":"My name is Hank. I work at Globex."}`)
	for _, tc := range []struct{ tenant, query, want string }{
		{"acme", "what is my name", "ada"},
		{"globex", "what is my name", "hank"},
		{"globex", "where do I work", "globex"},
		{"acme", "where do I work", "acme"},
	} {
		t.Run(tc.tenant+"/"+tc.query, func(t *testing.T) {
			out := ask(t, a, tc.tenant, `{"query":"`+tc.query+`","mode":"recall"}`)
			if len(out.Recalled) == 0 || out.Recalled[0].Object != tc.want {
				t.Fatalf("recalled %v, want %q first", objects(out.Recalled), tc.want)
			}
			for _, f := range out.Recalled {
				if !strings.HasPrefix(f.Key, tc.tenant+".") {
					t.Fatalf("tenant %s recalled %s", tc.tenant, f.Key)
				}
			}
		})
	}
	// A tenant whose id is a prefix of another's sees nothing of it.
	if out := ask(t, a, "acm", `{"mode":"recall","query":"name"}`); len(out.Recalled) != 0 || out.Total != 0 {
		t.Fatalf("tenant acm recalled %v", out.Recalled)
	}
}

func TestRecallRanksWhenThereAreMany(t *testing.T) {
	kv := bucket(t)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { now = now.Add(time.Minute); return now }
	for _, emb := range []llm.Embedder{nil, llm.LocalEmbedder{}} {
		name := "lexical"
		if emb != nil {
			name = emb.Name()
		}
		t.Run(name, func(t *testing.T) {
			tenant := "t-" + strings.ReplaceAll(name, "-", "")
			a := newAgent(t, memory.Config{KV: kv, Embedder: emb, RecallLimit: 3, Now: clock})
			ask(t, a, tenant, `{"mode":"remember","query":"My name is Ada. I live in Lisbon. I work at Initech. I work with Go. I like jazz. I prefer dark mode. I am a vegetarian. Remember that the demo is on Friday."}`)
			tests := []struct{ query, want string }{
				{"where do I live", "lives_in=lisbon"},
				{"which programming language do I work with? go tips", "works_with=go"},
				{"when is the demo", "note=demo is on friday"},
			}
			for _, tt := range tests {
				out := ask(t, a, tenant, `{"mode":"recall","query":"`+tt.query+`"}`)
				if out.Total != 8 || len(out.Recalled) == 0 || len(out.Recalled) > 3 {
					t.Fatalf("%q: total %d recalled %v", tt.query, out.Total, objects(out.Recalled))
				}
				if got := out.Recalled[0].Predicate + "=" + out.Recalled[0].Object; got != tt.want {
					t.Fatalf("%q: first %q, want %q (all %v, ranking %s)", tt.query, got, tt.want, objects(out.Recalled), out.Ranking)
				}
			}
			// Asked about nothing in particular, recall still answers: the newest.
			out := ask(t, a, tenant, `{"mode":"recall","query":"what do you know"}`)
			if len(out.Recalled) != 3 {
				t.Fatalf("explicit recall gave %v (%s)", objects(out.Recalled), out.Ranking)
			}
		})
	}
}

func TestAutoStoresAndRecallsTheRest(t *testing.T) {
	kv := bucket(t)
	a := newAgent(t, memory.Config{KV: kv})
	ask(t, a, "acme", `{"query":"I live in Berlin."}`)
	out := ask(t, a, "acme", `{"query":"I work with Go. Find docs about consumers."}`)
	if got := objects(out.Stored); !slices.Equal(got, []string{"works_with=go"}) {
		t.Fatalf("stored %q", got)
	}
	// Few facts: all are recalled, except the one just stored.
	if got := objects(out.Recalled); !slices.Equal(got, []string{"lives_in=berlin"}) || !strings.HasPrefix(out.Ranking, "all") {
		t.Fatalf("recalled %q (%s)", got, out.Ranking)
	}
}

func TestRejects(t *testing.T) {
	a := newAgent(t, memory.Config{KV: bucket(t)})
	for _, tc := range []struct{ name, tenant, input string }{
		{"bad tenant", "acme.>", `{"query":"I like Go"}`},
		{"empty tenant", "", `{"query":"I like Go"}`},
		{"bad mode", "acme", `{"query":"I like Go","mode":"forget"}`},
		{"unknown field", "acme", `{"text":"I like Go"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.Handle(t.Context(), agents.Request{TenantID: tc.tenant, StepID: "memory", Input: json.RawMessage(tc.input)}, &kittest.Recorder{})
			if !errors.Is(err, agents.ErrPermanent) {
				t.Fatalf("err = %v, want ErrPermanent", err)
			}
		})
	}
	if _, err := memory.New(memory.Config{}); err == nil {
		t.Fatal("a config without KV was accepted")
	}
}
