package retrievaltest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/retrieval"
)

func day(month time.Month, d int) time.Time { return time.Date(2024, month, d, 0, 0, 0, 0, time.UTC) }

func testDateFilter(t *testing.T, b retrieval.Backend) {
	chunks := Chunks("ledger",
		"Ledger entries for January were reconciled.",
		"Ledger entries for February were reconciled.",
		"Ledger entries for March were reconciled.",
		"Ledger entries of unknown date were reconciled.",
	)
	chunks[0].Date = day(time.January, 10)
	chunks[1].Date = day(time.February, 10)
	chunks[2].Date = day(time.March, 10)
	chunks[0].Metadata = map[string]any{"team": "red"}
	chunks[1].Metadata = map[string]any{"team": "blue"}
	chunks[2].Metadata = map[string]any{"team": "red"}
	index(t, b, TenantA, chunks)
	id := func(i ...int) []string {
		out := make([]string, len(i))
		for j, n := range i {
			out[j] = chunks[n].ID
		}
		slices.Sort(out)
		return out
	}
	tests := []struct {
		name string
		f    retrieval.Filters
		want []string
	}{
		{"none", retrieval.Filters{}, id(0, 1, 2, 3)},
		{"from", retrieval.Filters{From: day(time.February, 1)}, id(1, 2)},
		{"from inclusive", retrieval.Filters{From: day(time.February, 10)}, id(1, 2)},
		{"to", retrieval.Filters{To: day(time.February, 28)}, id(0, 1)},
		{"to inclusive", retrieval.Filters{To: day(time.February, 10)}, id(0, 1)},
		{"range", retrieval.Filters{From: day(time.February, 1), To: day(time.February, 28)}, id(1)},
		{"empty range", retrieval.Filters{From: day(time.April, 1), To: day(time.May, 1)}, id()},
		{"date and metadata", retrieval.Filters{From: day(time.February, 1), Metadata: map[string]string{"team": "red"}}, id(2)},
		{"metadata", retrieval.Filters{Metadata: map[string]string{"team": "blue"}}, id(1)},
		{"unknown metadata value", retrieval.Filters{Metadata: map[string]string{"team": "green"}}, id()},
	}
	for _, tt := range tests {
		for _, p := range profiles {
			t.Run(tt.name+"/"+p, func(t *testing.T) {
				hits := search(t, b, TenantA, p, retrieval.Query{Text: "ledger entries reconciled", Filters: tt.f})
				if got := sortedIDs(hits); !slices.Equal(got, tt.want) {
					t.Errorf("hits %v, want %v", got, tt.want)
				}
			})
		}
	}
}

// testMetadataFilter checks that a filter is applied before K is: the
// chunks passing it rank below K others without it.
func testMetadataFilter(t *testing.T, b retrieval.Backend) {
	var texts []string
	for i := range 8 {
		texts = append(texts, fmt.Sprintf("Invoice reconciliation batch %d, invoice totals for the blue team.", i))
	}
	for i := range 4 {
		texts = append(texts, fmt.Sprintf("Invoice note for the red team, filed as item %d.", i))
	}
	chunks := Chunks("inv", texts...)
	for i := range chunks {
		team := "blue"
		if i >= 8 {
			team = "red"
		}
		chunks[i].Metadata = map[string]any{"team": team}
	}
	index(t, b, TenantA, chunks)
	isRed := func(h retrieval.Hit) bool { return retrieval.MetadataString(h.Metadata["team"]) == "red" }
	q := retrieval.Query{Text: "invoice reconciliation batch totals", K: 3}
	for _, p := range profiles {
		if hits := search(t, b, TenantA, p, q); slices.ContainsFunc(hits, isRed) {
			t.Fatalf("%s without filter: %v; the test needs the red chunks to rank below the top 3", p, IDs(hits))
		}
		fq := q
		fq.Filters.Metadata = map[string]string{"team": "red"}
		hits := search(t, b, TenantA, p, fq)
		if len(hits) != 3 {
			t.Errorf("%s with filter team=red, K=3: %d hits %v, want 3 of the 4 red chunks", p, len(hits), IDs(hits))
		}
		for _, h := range hits {
			if !isRed(h) {
				t.Errorf("%s with filter team=red returned %s with metadata %v", p, h.ID, h.Metadata)
			}
		}
	}
}

// testConcurrent indexes and searches from several goroutines at once;
// run it with the race detector.
func testConcurrent(t *testing.T, b retrieval.Backend) {
	const writers, perWriter = 4, 8
	tenants := []string{TenantA, TenantB}
	var wg sync.WaitGroup
	for w := range writers {
		tenant := tenants[w%len(tenants)]
		wg.Go(func() {
			for j := range perWriter {
				c := Chunks(fmt.Sprintf("w%d-%d", w, j), fmt.Sprintf("Concurrent writer %d wrote note %d about parallel indexing.", w, j))
				if err := b.Index(t.Context(), tenant, c); err != nil {
					t.Errorf("Index: %v", err)
					return
				}
				for _, p := range profiles {
					hits, err := b.Search(t.Context(), tenant, p, retrieval.Query{Text: "parallel indexing note", K: 5})
					if err != nil {
						t.Errorf("Search %s: %v", p, err)
						return
					}
					if len(hits) == 0 {
						t.Errorf("Search %s in %s after indexing: no hits", p, tenant)
					}
				}
				if _, err := b.Count(t.Context(), tenant); err != nil {
					t.Errorf("Count: %v", err)
				}
			}
		})
	}
	wg.Wait()
	for _, tenant := range tenants {
		if n := count(t, b, tenant); n != writers/len(tenants)*perWriter {
			t.Errorf("Count(%s) = %d after concurrent indexing, want %d", tenant, n, writers/len(tenants)*perWriter)
		}
	}
}
