package search_test

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/search"
	"github.com/agentbus/agentbus/retrieval"
)

func day(s string) time.Time {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return t
}

// corpus indexes a few chunks for tenant "acme" and one secret for "globex".
func corpus(t *testing.T, m *memBackend) {
	t.Helper()
	ctx := t.Context()
	if err := m.Index(ctx, "acme", []retrieval.Chunk{
		chunk("consumers#0", "A durable consumer acknowledges every message it processes.", day("2024-03-01")),
		chunk("consumers#1", "Pull consumers fetch batches of messages on demand.", day("2024-06-01")),
		chunk("streams#0", "A stream stores messages published on its subjects.", day("2023-01-10")),
		chunk("kv#0", "The key value store keeps the newest revision of each key.", day("2024-09-01")),
	}); err != nil {
		t.Fatal(err)
	}
	if err := m.Index(ctx, "globex", []retrieval.Chunk{
		chunk("secret#0", "Globex consumer acknowledges secret merger messages.", day("2024-03-01")),
	}); err != nil {
		t.Fatal(err)
	}
}

func handle(t *testing.T, a *search.Agent, req agents.Request) (search.Output, *kittest.Recorder, error) {
	t.Helper()
	rec := &kittest.Recorder{}
	raw, err := a.Handle(t.Context(), req, rec)
	var out search.Output
	if err == nil {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
	}
	return out, rec, err
}

func newAgent(t *testing.T, b retrieval.Backend) *search.Agent {
	t.Helper()
	a, err := search.New(search.Config{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSearchNeverCrossesTenants(t *testing.T) {
	m := newMem()
	corpus(t, m)
	a := newAgent(t, m)
	for _, tenant := range []string{"acme", "globex"} {
		t.Run(tenant, func(t *testing.T) {
			out, _, err := handle(t, a, request(tenant, `{"query":"consumer acknowledges messages","ensemble":true}`, nil))
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Hits) == 0 {
				t.Fatal("no hits")
			}
			for _, h := range out.Hits {
				if secret := strings.HasPrefix(h.ID, "secret"); secret != (tenant == "globex") {
					t.Fatalf("tenant %s got hit %s", tenant, h.ID)
				}
			}
		})
	}
	for _, c := range m.searched() {
		if !strings.HasPrefix(c, "acme/") && !strings.HasPrefix(c, "globex/") {
			t.Fatalf("searched %q", c)
		}
	}
}

func TestSearchEnsembleFusesEveryProfileAndVariant(t *testing.T) {
	m := newMem()
	corpus(t, m)
	// Equal weights and no reranking: the hits are in plain RRF order.
	a, err := search.New(search.Config{Backend: m, Weights: retrieval.ProfileWeights{}, NoRerank: true})
	if err != nil {
		t.Fatal(err)
	}
	deps := map[string]string{
		"profile_selection": `{"profiles":[{"name":"vector","confidence":0.4},{"name":"bm25","confidence":0.9},{"name":"colbert","confidence":1}],"ensemble":true}`,
		"query_enhancement": `{"variants":["pull consumer batches","Consumer acknowledges", "pull consumer batches"],"synonyms":{}}`,
	}
	out, rec, err := handle(t, a, request("acme", `{"query":"consumer acknowledges"}`, deps))
	if err != nil {
		t.Fatal(err)
	}
	if !out.Ensemble || !slices.Equal(out.ProfilesUsed, []string{"bm25", "vector"}) || len(out.ProfilesFailed) != 0 {
		t.Fatalf("ensemble %v used %v failed %v", out.Ensemble, out.ProfilesUsed, out.ProfilesFailed)
	}
	// The duplicate variant and the one equal to the query are dropped.
	if !slices.Equal(out.Variants, []string{"pull consumer batches"}) {
		t.Fatalf("variants %q", out.Variants)
	}
	wantCalls := []string{
		"acme/bm25/consumer acknowledges", "acme/bm25/pull consumer batches",
		"acme/vector/consumer acknowledges", "acme/vector/pull consumer batches",
	}
	if got := m.searched(); !slices.Equal(got, wantCalls) {
		t.Fatalf("searched %q, want %q", got, wantCalls)
	}
	var names []string
	for _, l := range out.Lists {
		names = append(names, l.Name)
	}
	if !slices.Equal(names, []string{"bm25", "bm25:v1", "vector", "vector:v1"}) {
		t.Fatalf("lists %q", names)
	}
	sawVariant := false
	for i, h := range out.Hits {
		var want float64
		for name, rank := range h.Ranks.Map() {
			if !slices.Contains(names, name) || !slices.Contains(h.Profiles, name) {
				t.Fatalf("hit %s ranked by unknown list %q", h.ID, name)
			}
			want += 1 / float64(retrieval.RRFK+rank)
			sawVariant = sawVariant || strings.HasSuffix(name, ":v1")
		}
		if math.Abs(h.RRFScore-want) > 1e-12 {
			t.Fatalf("hit %s rrf %v, want %v from ranks %v", h.ID, h.RRFScore, want, h.Ranks.Map())
		}
		if i > 0 && h.RRFScore > out.Hits[i-1].RRFScore {
			t.Fatalf("hits not sorted by rrf_score: %v", out.Hits)
		}
	}
	if !sawVariant {
		t.Fatal("no hit came from a variant list")
	}
	if out.Hits[0].ID != "consumers#0" {
		t.Fatalf("top hit %s, want consumers#0", out.Hits[0].ID)
	}
	if !rec.Said("searching 2 profiles") || !rec.Said("fused ") {
		t.Fatalf("progress %q", rec.Messages())
	}
}

func TestSearchProfileChoice(t *testing.T) {
	tests := []struct {
		name  string
		input string
		deps  map[string]string
		want  []string
		ens   bool
	}{
		{"default is the first profile", `{"query":"stream"}`, nil, []string{"bm25"}, false},
		{"input ensemble widens to every profile", `{"query":"stream","ensemble":true}`, nil, []string{"bm25", "vector"}, true},
		{"agents/profiles' selected field", `{"query":"stream"}`,
			map[string]string{"profile_selection": `{"selected":[{"name":"vector","confidence":0.8},{"name":"bm25","confidence":0.6}],"alternatives":[],"ensemble":true}`},
			[]string{"vector", "bm25"}, true},
		{"selection's best profile", `{"query":"stream"}`,
			map[string]string{"profile_selection": `{"profiles":[{"name":"bm25","confidence":0.2},{"name":"vector","confidence":0.7}]}`},
			[]string{"vector"}, false},
		{"input wins over selection", `{"query":"stream","ensemble":false,"profiles":["bm25"]}`,
			map[string]string{"profile_selection": `{"profiles":[{"name":"vector","confidence":0.7}],"ensemble":true}`},
			[]string{"bm25"}, false},
		{"unknown selections fall back to defaults", `{"query":"stream"}`,
			map[string]string{"profile_selection": `{"profiles":[{"name":"semantic","confidence":0.9}]}`},
			[]string{"bm25"}, false},
		{"a null dependency is ignored", `{"query":"stream"}`,
			map[string]string{"profile_selection": `null`}, []string{"bm25"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMem()
			corpus(t, m)
			out, _, err := handle(t, newAgent(t, m), request("acme", tt.input, tt.deps))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out.ProfilesUsed, tt.want) || out.Ensemble != tt.ens {
				t.Fatalf("used %q ensemble %v, want %q %v", out.ProfilesUsed, out.Ensemble, tt.want, tt.ens)
			}
		})
	}
}

func TestSearchAppliesEntityDateRange(t *testing.T) {
	m := newMem()
	corpus(t, m)
	deps := map[string]string{"entity_extraction": `{"entities":[],"time_ranges":[],"filters":{"from":"2024-01-01T00:00:00Z","to":"2024-07-01T00:00:00Z"}}`}
	out, _, err := handle(t, newAgent(t, m), request("acme", `{"query":"messages consumers stream","ensemble":true}`, deps))
	if err != nil {
		t.Fatal(err)
	}
	if out.FiltersApplied == nil || out.FiltersApplied.From == nil || !out.FiltersApplied.From.Equal(day("2024-01-01")) {
		t.Fatalf("filters_applied %+v", out.FiltersApplied)
	}
	var ids []string
	for _, h := range out.Hits {
		ids = append(ids, h.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"consumers#0", "consumers#1"}) {
		t.Fatalf("hits %q, want only the two in range", ids)
	}
	// The input's own filters win over the dependency's.
	out, _, err = handle(t, newAgent(t, m), request("acme",
		`{"query":"messages stream","filters":{"to":"2023-12-31T00:00:00Z"}}`, deps))
	if err != nil || len(out.Hits) != 1 || out.Hits[0].ID != "streams#0" {
		t.Fatalf("hits %v, %v; want streams#0 only", out.Hits, err)
	}
}

func TestSearchDegradesAndFails(t *testing.T) {
	t.Run("one profile down", func(t *testing.T) {
		m := newMem(retrieval.ProfileVector)
		corpus(t, m)
		out, rec, err := handle(t, newAgent(t, m), request("acme", `{"query":"consumer","ensemble":true}`, nil))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out.ProfilesUsed, []string{"bm25"}) || len(out.ProfilesFailed) != 1 ||
			out.ProfilesFailed[0].Profile != "vector" || !strings.Contains(out.ProfilesFailed[0].Error, "profile down") {
			t.Fatalf("used %q failed %+v", out.ProfilesUsed, out.ProfilesFailed)
		}
		if len(out.Hits) == 0 || !rec.Said("profile vector failed") {
			t.Fatalf("hits %d progress %q", len(out.Hits), rec.Messages())
		}
	})
	t.Run("every profile down", func(t *testing.T) {
		m := newMem(retrieval.ProfileVector, retrieval.ProfileBM25)
		_, _, err := handle(t, newAgent(t, m), request("acme", `{"query":"consumer","ensemble":true}`, nil))
		if !errors.Is(err, retrieval.ErrAllProfilesFailed) || errors.Is(err, agents.ErrPermanent) {
			t.Fatalf("err = %v, want a retryable ErrAllProfilesFailed", err)
		}
	})
	bad := []struct{ name, tenant, input string }{
		{"unknown profiles only", "acme", `{"query":"x","profiles":["nope"]}`},
		{"bad tenant", "Acme.*", `{"query":"x"}`},
		{"unknown field", "acme", `{"query":"x","limit":3}`},
		{"k too big", "acme", `{"query":"x","k":1000}`},
		{"bad date", "acme", `{"query":"x","filters":{"from":"yesterday"}}`},
		{"no query at all", "acme", `{}`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			req := request(tt.tenant, tt.input, nil)
			if tt.name == "no query at all" {
				req.Query = " "
			}
			_, _, err := handle(t, newAgent(t, newMem()), req)
			if !errors.Is(err, agents.ErrPermanent) {
				t.Fatalf("err = %v, want ErrPermanent", err)
			}
		})
	}
}

func TestSearchUsesWorkflowQueryAndK(t *testing.T) {
	m := newMem()
	corpus(t, m)
	req := request("acme", `{"k":1,"ensemble":true}`, nil)
	req.Query = "messages"
	out, _, err := handle(t, newAgent(t, m), req)
	if err != nil {
		t.Fatal(err)
	}
	if out.Query != "messages" || len(out.Hits) != 1 || out.Backend != "memory-test" {
		t.Fatalf("query %q hits %d backend %q", out.Query, len(out.Hits), out.Backend)
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := search.New(search.Config{}); err == nil || !strings.Contains(err.Error(), "Backend") {
		t.Fatalf("err = %v", err)
	}
	if _, err := search.New(search.Config{Backend: newMem(), K: -1}); err == nil {
		t.Fatal("negative K accepted")
	}
}
