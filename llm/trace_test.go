package llm_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestChatCallIsAGenAIChildSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	srv := newFakeServer(t, func(r chatRequest) (int, string) {
		if r.Messages[1].Content == "fail" {
			return 500, "boom"
		}
		return 200, "ok"
	})
	chat := newChat(t, srv.URL)
	ctx, parent := tp.Tracer("test").Start(context.Background(), "workflow plan")
	if _, err := chat.Complete(ctx, "s", "u"); err != nil {
		t.Fatal(err)
	}
	if _, err := chat.Complete(ctx, "s", "fail"); err == nil {
		t.Fatal("want the 500 as an error")
	}
	parent.End()
	if _, err := chat.Complete(context.Background(), "s", "untraced"); err != nil {
		t.Fatal(err)
	}
	var calls []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "chat test-model" {
			calls = append(calls, s)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("want 2 chat spans (none for the untraced call), got %d", len(calls))
	}
	for i, s := range calls {
		if s.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("call %d is not the caller's child", i)
		}
		attrs := map[string]string{}
		for _, a := range s.Attributes {
			attrs[string(a.Key)] = a.Value.String()
		}
		if attrs["gen_ai.operation.name"] != "chat" || attrs["gen_ai.request.model"] != "test-model" || attrs["gen_ai.provider.name"] != "openai" {
			t.Errorf("call %d attributes %v", i, attrs)
		}
		if failed := s.Status.Code == codes.Error; failed != (i == 1) {
			t.Errorf("call %d status %+v", i, s.Status)
		}
	}
}
