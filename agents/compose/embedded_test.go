package compose_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents/compose"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
)

// TestComposeOverEmbeddedHits composes from what a real embedded index
// returns for chunked Markdown, and checks every cited sentence against
// the chunk it cites.
func TestComposeOverEmbeddedHits(t *testing.T) {
	ix, err := embedded.Open(embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	ch, err := retrieval.NewChunker(retrieval.ChunkerConfig{MaxChars: 200})
	if err != nil {
		t.Fatal(err)
	}
	docs := []retrieval.Document{
		{ID: "consumers", Title: "Consumers", Source: "docs/consumers.md", Text: `# Acknowledgements

A durable consumer acknowledges every message it processes. Unacknowledged messages are redelivered after the ack wait expires.
The server tracks each consumer's position, so a restarted client continues where it stopped.

# Pull consumers

Pull consumers fetch batches of messages on demand. A pull consumer acknowledges messages explicitly.

- Redelivered messages carry a delivery count.
- After MaxDeliver attempts a message is no longer redelivered.`},
		{ID: "streams", Title: "Streams", Source: "docs/streams.md",
			Text: "A stream stores the messages published on its subjects. Limits bound a stream by age, size or count of messages."},
	}
	var chunks []retrieval.Chunk
	for _, d := range docs {
		chunks = append(chunks, ch.Chunk(d)...)
	}
	if err := ix.Index(t.Context(), "acme", chunks); err != nil {
		t.Fatal(err)
	}
	const q = "how are messages acknowledged and redelivered"
	res, err := retrieval.Ensemble(t.Context(), ix, "acme", nil, retrieval.Query{Text: q, K: 10})
	if err != nil {
		t.Fatal(err)
	}
	var hs []hit
	for _, h := range res.Hits {
		hs = append(hs, hit{ID: h.ID, DocID: h.DocID, Title: h.Title, Text: h.Text, Source: h.Source, Score: h.Score})
	}
	b, _ := json.Marshal(map[string]any{"query": q, "hits": res.Hits})
	a := newAgent(t, compose.Config{})
	for _, capability := range []string{compose.CapabilitySummarize, compose.CapabilityDetailedReport} {
		t.Run(capability, func(t *testing.T) {
			out, _ := run(t, a, request(capability, `{"query":"`+q+`"}`, map[string]string{"search": string(b)}))
			if n := checkExtractive(t, out, hs); n < 2 {
				t.Fatalf("%d cited sentences:\n%s", n, out.Answer)
			}
			if !strings.Contains(out.Answer, "acknowledges") || !strings.Contains(out.Answer, "redelivered") {
				t.Fatalf("answer misses the point:\n%s", out.Answer)
			}
			t.Logf("%s", out.Answer)
		})
	}
}
