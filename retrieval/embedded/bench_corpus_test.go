package embedded_test

import (
	"bufio"
	"context"
	"encoding/json"
	"testing"

	sample "github.com/agentbus/agentbus/corpus"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/retrieval/ingest"
)

// BenchmarkSampleCorpus searches the shipped sample corpus (176 documents,
// about 6,100 chunks, indexed as `agentbus serve` does) with its 60
// labelled queries, in turn: each profile alone and the parallel RRF
// ensemble of both, with the default configuration. The seed system's
// claim to check: a parallel ensemble costs close to its slowest profile.
//
//	go test -run '^$' -bench SampleCorpus ./retrieval/embedded
func BenchmarkSampleCorpus(b *testing.B) {
	ctx := context.Background()
	ix, err := embedded.Open(embedded.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ix.Close() })
	in, err := ingest.New(ingest.Config{Backend: ix, Tenant: "default"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := in.JSONL(ctx, sample.DocumentsName, sample.Documents()); err != nil {
		b.Fatal(err)
	}
	var queries []string
	sc := bufio.NewScanner(sample.Queries())
	for sc.Scan() {
		var q struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			b.Fatal(err)
		}
		queries = append(queries, q.Text)
	}
	run := func(b *testing.B, search func(q retrieval.Query) error) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := search(retrieval.Query{Text: queries[i%len(queries)], K: 10}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	}
	for _, p := range ix.Profiles() {
		b.Run(p, func(b *testing.B) {
			run(b, func(q retrieval.Query) error {
				_, err := ix.Search(ctx, "default", p, q)
				return err
			})
		})
	}
	b.Run("ensemble", func(b *testing.B) {
		run(b, func(q retrieval.Query) error {
			_, err := retrieval.Ensemble(ctx, ix, "default", nil, q)
			return err
		})
	})
}
