package search

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentbus/agentbus/retrieval"
)

// twoDocs answers every profile with the same two hits.
type twoDocs struct{}

func (twoDocs) Name() string                                           { return "two" }
func (twoDocs) Profiles() []string                                     { return []string{"bm25", "vector"} }
func (twoDocs) Index(context.Context, string, []retrieval.Chunk) error { return nil }
func (twoDocs) Count(context.Context, string) (int, error)             { return 2, nil }
func (twoDocs) Close() error                                           { return nil }
func (twoDocs) Search(context.Context, string, string, retrieval.Query) ([]retrieval.Hit, error) {
	return []retrieval.Hit{{ID: "a#0", DocID: "a"}, {ID: "b#0", DocID: "b"}}, nil
}

func TestRunSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, step := tp.Tracer("test").Start(context.Background(), "step run")
	lists := []list{{name: "bm25", profile: "bm25", query: "q"}, {name: "vector", profile: "vector", query: "q"}}
	a, err := New(Config{Backend: twoDocs{}})
	if err != nil {
		t.Fatal(err)
	}
	p := plan{k: 5}
	if _, _, err := a.run(ctx, "acme", p, lists, -1); err != nil {
		t.Fatal(err)
	}
	step.End()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		byName[s.Name] = s
	}
	ens, ok := byName["search ensemble"]
	if !ok || ens.Parent.SpanID() != step.SpanContext().SpanID() {
		t.Fatalf("no ensemble span under the step's run: %v", byName)
	}
	for _, name := range []string{"search profile bm25", "search profile vector", "search fusion", "search rerank"} {
		if s, ok := byName[name]; !ok || s.Parent.SpanID() != ens.SpanContext.SpanID() {
			t.Errorf("%s missing or not under the ensemble", name)
		}
	}
	if _, _, err := a.run(context.Background(), "acme", p, lists, -1); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 6 {
		t.Errorf("an untraced search recorded spans: %d in all, want 6", n)
	}
}
