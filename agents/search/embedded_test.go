package search_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
)

// docs are two tenants' documents; globex's mention the same words so
// that a leak would show.
var docs = map[string][]retrieval.Document{
	"acme": {
		{ID: "consumers", Title: "Consumers", Source: "docs/consumers.md", Metadata: map[string]any{"date": "2024-03-01"},
			Text: "# Acknowledgements\n\nA durable consumer acknowledges every message it processes. Unacknowledged messages are redelivered after the ack wait.\n\n# Pull\n\nPull consumers fetch batches of messages on demand."},
		{ID: "streams", Title: "Streams", Source: "docs/streams.md", Metadata: map[string]any{"date": "2023-01-10"},
			Text: "A stream stores the messages published on its subjects, with limits on age and size."},
		{ID: "kv", Title: "Key-value store", Source: "docs/kv.md", Metadata: map[string]any{"date": "2024-09-01"},
			Text: "The key value store keeps the newest revision of each key; watchers see every update."},
	},
	"globex": {
		{ID: "secret", Title: "Merger", Source: "globex/merger.md",
			Text: "Globex consumers acknowledge the secret merger messages before anyone else."},
	},
}

func embeddedIndex(t *testing.T) *embedded.Index {
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
	for tenant, ds := range docs {
		var chunks []retrieval.Chunk
		for _, d := range ds {
			chunks = append(chunks, ch.Chunk(d)...)
		}
		if err := ix.Index(t.Context(), tenant, chunks); err != nil {
			t.Fatal(err)
		}
	}
	return ix
}

func TestSearchOverEmbeddedIndex(t *testing.T) {
	ix := embeddedIndex(t)
	a := newAgent(t, ix)
	deps := map[string]string{
		"profile_selection": `{"selected":[{"name":"bm25","confidence":0.7},{"name":"vector","confidence":0.5}],"ensemble":true}`,
		"query_enhancement": `{"variants":["consumer ack redelivery"]}`,
	}
	out, rec, err := handle(t, a, request("acme", `{"query":"how do consumers acknowledge messages"}`, deps))
	if err != nil {
		t.Fatal(err)
	}
	if out.Backend != ix.Name() || !slices.Equal(out.ProfilesUsed, []string{"bm25", "vector"}) || len(out.ProfilesFailed) != 0 {
		t.Fatalf("backend %q used %q failed %v", out.Backend, out.ProfilesUsed, out.ProfilesFailed)
	}
	if len(out.Hits) == 0 || out.Hits[0].DocID != "consumers" {
		t.Fatalf("hits %+v, want the consumers document first", out.Hits)
	}
	for _, h := range out.Hits {
		if h.DocID == "secret" || strings.Contains(h.Text, "Globex") {
			t.Fatalf("acme's search returned globex's %s", h.ID)
		}
		if len(h.Ranks) == 0 || h.RRFScore <= 0 {
			t.Fatalf("hit %s is not fused: %+v", h.ID, h)
		}
	}
	if !slices.ContainsFunc(out.Hits, func(h retrieval.Hit) bool { return slices.Contains(h.Profiles, "bm25:v1") }) {
		t.Fatalf("no hit from the variant list: %+v", out.Hits)
	}
	if !rec.Said("searching 2 profiles") {
		t.Fatalf("progress %q", rec.Messages())
	}

	// The entity step's date range reaches the index's filters.
	ent := map[string]string{"entity_extraction": `{"filters":{"from":"2024-06-01T00:00:00Z","to":"2024-12-31T00:00:00Z"}}`}
	out, _, err = handle(t, a, request("acme", `{"query":"key value store revision","ensemble":true}`, ent))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range out.Hits {
		if h.DocID != "kv" {
			t.Fatalf("hit %s outside the date range", h.ID)
		}
	}
	if len(out.Hits) == 0 {
		t.Fatal("no hit in the date range")
	}
}

func TestSearchOverEmbeddedIndexIsPerTenant(t *testing.T) {
	a := newAgent(t, embeddedIndex(t))
	out, _, err := handle(t, a, request("globex", `{"query":"consumers acknowledge messages","ensemble":true}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range out.Hits {
		if h.DocID != "secret" {
			t.Fatalf("globex got acme's %s", h.ID)
		}
	}
	out, _, err = handle(t, a, request("initech", `{"query":"consumers","ensemble":true}`, nil))
	if err != nil || len(out.Hits) != 0 {
		t.Fatalf("a tenant with no index got %v, %v", out.Hits, err)
	}
}
