package retrieval

import (
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestEnsembleSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	f := &fakeBackend{
		lists: map[string][]Hit{ProfileBM25: hits("a", "b"), ProfileVector: hits("b")},
		errs:  map[string]error{ProfileVector: errors.New("fake: vector engine down")},
	}
	ctx, run := tp.Tracer("test").Start(t.Context(), "step run")
	if _, err := Ensemble(ctx, f, "acme", nil, Query{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	run.End()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		byName[s.Name] = s
	}
	ens, ok := byName["search ensemble"]
	if !ok || ens.Parent.SpanID() != run.SpanContext().SpanID() {
		t.Fatalf("no ensemble span under the run: %v", byName)
	}
	for _, name := range []string{"search profile bm25", "search profile vector", "search fusion"} {
		s, ok := byName[name]
		if !ok || s.Parent.SpanID() != ens.SpanContext.SpanID() {
			t.Errorf("%s missing or not under the ensemble", name)
		}
	}
	if s := byName["search profile vector"]; s.Status.Code != codes.Error {
		t.Errorf("the failing profile's span: %+v", s.Status)
	}
}
