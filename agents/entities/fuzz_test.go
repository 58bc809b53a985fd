package entities

import (
	"encoding/json"
	"testing"

	"github.com/agentbus/agentbus/schemas"
)

// FuzzExtract checks the invariants of any query: offsets point at the
// text, entities do not overlap, ranges run forwards, and the output
// passes its schema.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{"OpenAI news from San Francisco last week", "between March and May 2024", "Q1 2024 ünïcödé Zürich 5%",
		"2024-02-30", "since 2020-01-01", "İstanbul Straße past 12 months", "$1,200 million in Tokyo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if q == "" {
			return
		}
		out := Extract(q, now)
		end := 0
		for _, e := range out.Entities {
			if e.Start < end || e.End <= e.Start || e.End > len(q) || q[e.Start:e.End] != e.Text {
				t.Fatalf("entity %+v overlaps or does not point at its text in %q", e, q)
			}
			end = e.End
		}
		for _, r := range out.TimeRanges {
			if r.To.Before(r.From) {
				t.Fatalf("range %+v runs backwards", r)
			}
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas.Validate(OutputSchema, b); err != nil {
			t.Fatalf("output fails its schema: %v", err)
		}
	})
}
