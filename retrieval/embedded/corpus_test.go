package embedded_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentbus/agentbus/retrieval"
)

var (
	subjects = []string{"the scheduler", "a worker", "the gateway", "the orchestrator", "each tenant", "the index",
		"a retry policy", "the stream", "the consumer", "an agent", "the planner", "a checkpoint"}
	verbs = []string{"acknowledges", "replays", "indexes", "throttles", "persists", "validates", "forwards",
		"compacts", "cancels", "resumes", "batches", "annotates"}
	objects = []string{"pending messages", "stale checkpoints", "search results", "workflow steps", "embedding vectors",
		"rate limits", "audit events", "billing records", "sensor readings", "shipping manifests", "support tickets",
		"invoice totals"}
	tails = []string{"before the deadline", "after a restart", "during peak load", "once per minute",
		"for every tenant", "without blocking readers", "in the background", "when the queue drains"}
)

// corpus is n generated chunks of two or three sentences each, dated over
// 2024, with a "team" of a, b, c or d (by index modulo 4). seed varies the
// text so that re-indexing with another seed replaces every chunk.
func corpus(n int, seed uint64) []retrieval.Chunk {
	r := rand.New(rand.NewPCG(seed, 7))
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	out := make([]retrieval.Chunk, n)
	for i := range out {
		var b strings.Builder
		for range 2 + r.IntN(2) {
			fmt.Fprintf(&b, "%s %s %s %s. ", pick(subjects), pick(verbs), pick(objects), pick(tails))
		}
		doc := fmt.Sprintf("doc%04d", i)
		out[i] = retrieval.Chunk{
			ID: doc + "#0", DocID: doc, Title: fmt.Sprintf("Note %d", i), Text: strings.TrimSpace(b.String()),
			Date:     time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i%365),
			Metadata: map[string]any{"team": string(rune('a' + i%4)), "n": i},
		}
	}
	return out
}
