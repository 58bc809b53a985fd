package events_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/events"
)

const w3c = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestTraceParentRoundTrip(t *testing.T) {
	ctx := events.WithTraceParent(context.Background(), w3c)
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("span context %+v", sc)
	}
	if got := events.TraceParent(ctx); got != w3c {
		t.Fatalf("TraceParent = %q, want %q", got, w3c)
	}
	if events.TraceID(w3c) != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatal("TraceID")
	}
	for _, bad := range []string{"", "00-zz-00f067aa0ba902b7-01", "garbage"} {
		if events.TraceParent(events.WithTraceParent(context.Background(), bad)) != "" || events.TraceID(bad) != "" {
			t.Errorf("%q made a trace context", bad)
		}
	}
	tp := sdktrace.NewTracerProvider()
	cctx, span := tp.Tracer("t").Start(ctx, "child")
	defer span.End()
	if events.TraceID(events.TraceParent(cctx)) != sc.TraceID().String() {
		t.Fatal("a child span left the trace")
	}
}

func TestDecodeTakesThePlainW3CHeader(t *testing.T) {
	env, err := events.New(events.TypeStatus, "wf/event/0", events.SourceOrchestrator, "acme", "wf", "", events.Status{State: events.StateWorking})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := events.Encode(env)
	if err != nil {
		t.Fatal(err)
	}
	msg.Header["traceparent"] = []string{w3c}
	got, err := events.Decode(msg.Header, msg.Data)
	if err != nil || got.TraceParent != w3c {
		t.Fatalf("TraceParent %q (%v), want the W3C header's", got.TraceParent, err)
	}
	msg.Header[events.HeaderTraceParent] = []string{"00-11111111111111111111111111111111-2222222222222222-01"}
	if got, _ := events.Decode(msg.Header, msg.Data); got.TraceParent != msg.Header[events.HeaderTraceParent][0] {
		t.Fatalf("ce-traceparent must win over traceparent, got %q", got.TraceParent)
	}
}
