package gateway_test

import (
	"context"
	"testing"
)

// BenchmarkSubmitAndFollow measures one workflow's HTTP round trip: POST a
// bare query (202 once an orchestrator recorded it), then read its SSE
// stream from `connected` to the terminal frame.
func BenchmarkSubmitAndFollow(b *testing.B) {
	s := startStack(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := map[string]any{"query": "bench"}
	frames := 0
	for b.Loop() {
		sub, err := s.submit(ctx, body)
		if err != nil {
			b.Fatal(err)
		}
		_, fs, err := s.follow(ctx, sub.EventsURL)
		if err != nil {
			b.Fatal(err)
		}
		if end := fs[len(fs)-1]; end.Type != "complete" {
			b.Fatalf("workflow %s ended with %s %s", sub.WorkflowID, end.Type, end.Data)
		}
		frames += len(fs)
	}
	b.ReportMetric(float64(frames)/float64(b.N), "frames/op")
}
