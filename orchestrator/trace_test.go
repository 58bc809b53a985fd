package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/workflow"
)

// startTraced is startStack with every span recorded in memory.
func startTraced(t testing.TB, tp trace.TracerProvider, wcfg agents.WorkerConfig, extra ...agents.Agent) *stack {
	t.Helper()
	env := bustest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	log := bustest.Logger(t)
	wcfg.Bus, wcfg.Agents, wcfg.Logger, wcfg.TracerProvider = env.Bus, append([]agents.Agent{echo.Agent{}}, extra...), log, tp
	w, err := agents.NewWorker(wcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(ctx, orchestrator.Config{Bus: env.Bus, Logger: log, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
	return &stack{env: env, orch: o}
}

func memoryTracer() (*tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	exp := tracetest.NewInMemoryExporter()
	return exp, sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
}

// spansUntil waits until the exported spans satisfy done, or fails the test
// at the deadline; the worker ends its run span after its reply is out, so
// a finished workflow's spans arrive a moment after its last event.
func spansUntil(t *testing.T, exp *tracetest.InMemoryExporter, what string, done func(tracetest.SpanStubs) bool) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := exp.GetSpans()
		if done(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("spans never showed %s; got:\n%s", what, dump(got))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func named(ss tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range ss {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func childrenOf(ss tracetest.SpanStubs, parent tracetest.SpanStub, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range ss {
		if s.Name == name && s.Parent.SpanID() == parent.SpanContext.SpanID() {
			out = append(out, s)
		}
	}
	return out
}

func attr(s tracetest.SpanStub, key string) attribute.Value {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value
		}
	}
	return attribute.Value{}
}

func dump(ss tracetest.SpanStubs) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "  %s span=%s parent=%s step=%s status=%v %q\n", s.Name, s.SpanContext.SpanID(), s.Parent.SpanID(),
			attr(s, "agentbus.step.id").AsString(), s.Status.Code, s.Status.Description)
	}
	return b.String()
}

func TestTraceDiamondIsOneTree(t *testing.T) {
	exp, tp := memoryTracer()
	s := startTraced(t, tp, agents.WorkerConfig{})
	submit(t, s.env.Bus, "default", "traced", events.WorkflowSubmitted{Plan: plan(
		step("A", "echo"), step("B", "echo", "A"), step("C", "echo", "A"), step("D", "echo", "B", "C"))})
	rs := collect(t, s.env.Bus, "default", "traced")
	if end := last(t, rs); end.Type != events.TypeComplete {
		t.Fatalf("workflow ended %s:%s", end.Type, describe(rs))
	}
	ss := spansUntil(t, exp, "4 step runs and the completion", func(ss tracetest.SpanStubs) bool {
		return len(named(ss, "step run")) == 4 && len(named(ss, "workflow completed")) == 1 && len(named(ss, "step reply")) == 4 &&
			len(named(ss, "workflow submit")) == 1 // ended when its handler returns, which may be late
	})
	roots := named(ss, "workflow submit")
	if len(roots) != 1 || roots[0].Parent.IsValid() {
		t.Fatalf("want one root submit span without a parent:\n%s", dump(ss))
	}
	root := roots[0]
	tid := root.SpanContext.TraceID()
	for _, sp := range ss {
		if sp.SpanContext.TraceID() != tid {
			t.Errorf("span %s in trace %s, want %s", sp.Name, sp.SpanContext.TraceID(), tid)
		}
	}
	if len(childrenOf(ss, root, "workflow plan")) != 1 || len(childrenOf(ss, root, "workflow completed")) != 1 {
		t.Fatalf("plan and completion must be children of the submission:\n%s", dump(ss))
	}
	steps := childrenOf(ss, root, "step echo")
	seen := map[string]bool{}
	for _, st := range steps {
		id := attr(st, "agentbus.step.id").AsString()
		seen[id] = true
		if st.SpanKind != trace.SpanKindProducer || attr(st, "messaging.system").AsString() != "nats" ||
			!strings.HasPrefix(attr(st, "messaging.destination.name").AsString(), "agentbus.default.step.echo") {
			t.Errorf("step %s: kind %v, attributes %v", id, st.SpanKind, st.Attributes)
		}
		q, r := childrenOf(ss, st, "step queue"), childrenOf(ss, st, "step run")
		if len(q) != 1 || len(r) != 1 {
			t.Fatalf("step %s has %d queue and %d run children, want 1 and 1:\n%s", id, len(q), len(r), dump(ss))
		}
		if q[0].EndTime.After(r[0].StartTime.Add(time.Millisecond)) {
			t.Errorf("step %s: queue ends %s after run starts %s", id, q[0].EndTime, r[0].StartTime)
		}
		if attr(r[0], "agentbus.worker.id").AsString() == "" || attr(r[0], "agentbus.step.attempt").AsInt64() != 1 {
			t.Errorf("step %s run attributes %v", id, r[0].Attributes)
		}
		if len(childrenOf(ss, r[0], "step reply")) != 1 {
			t.Errorf("step %s: the reply's span is not a child of its run:\n%s", id, dump(ss))
		}
	}
	if len(steps) != 4 || len(seen) != 4 {
		t.Fatalf("want 4 step spans under the submission, got %d (%v):\n%s", len(steps), seen, dump(ss))
	}
	cp, err := s.orch.Checkpoint(context.Background(), "default", "traced")
	if err != nil || cp.TraceID != tid.String() {
		t.Fatalf("checkpoint trace id %q (%v), want %s", cp.TraceID, err, tid)
	}
	var first events.Status
	if err := rs[0].Envelope.Unmarshal(&first); err != nil || first.TraceID != tid.String() {
		t.Fatalf("first status %+v (%v), want trace id %s", first, err, tid)
	}
	for _, r := range rs {
		if events.TraceID(r.Envelope.TraceParent) != tid.String() {
			t.Errorf("%s event carries ce-traceparent %q outside the trace", r.Envelope.Type.Short(), r.Envelope.TraceParent)
		}
	}
}

func TestTraceJoinsTheSubmittersTrace(t *testing.T) {
	exp, tp := memoryTracer()
	s := startTraced(t, tp, agents.WorkerConfig{})
	ctx, client := tp.Tracer("client").Start(context.Background(), "client submit")
	client.End()
	env, err := events.New(events.TypeWorkflowSubmitted, events.SubmitKey("default", "joined"), events.SourceGateway, "default", "joined", "",
		events.WorkflowSubmitted{Plan: plan(step("A", "echo"))})
	if err != nil {
		t.Fatal(err)
	}
	env.TraceParent = events.TraceParent(ctx)
	if _, err := s.env.Bus.Publish(ctx, "agentbus.default.workflow.submit", env, env.ID); err != nil {
		t.Fatal(err)
	}
	collect(t, s.env.Bus, "default", "joined")
	// The submission's span ends when its handler returns, which may be
	// after the worker ran the step it dispatched: wait for both.
	ss := spansUntil(t, exp, "the run and the submission", func(ss tracetest.SpanStubs) bool {
		return len(named(ss, "step run")) == 1 && len(named(ss, "workflow submit")) == 1
	})
	sub := named(ss, "workflow submit")
	if len(sub) != 1 || sub[0].Parent.SpanID() != client.SpanContext().SpanID() || sub[0].SpanContext.TraceID() != client.SpanContext().TraceID() {
		t.Fatalf("the submission span is not the client's child:\n%s", dump(ss))
	}
}

func TestTraceRedeliveredStepShowsTwoRuns(t *testing.T) {
	exp, tp := memoryTracer()
	flaky := newFn("flaky", func(_ context.Context, req agents.Request) (json.RawMessage, error) {
		if req.Delivery == 1 {
			return nil, errors.New("flaky: first delivery fails")
		}
		return json.RawMessage(`"ok"`), nil
	})
	s := startTraced(t, tp, agents.WorkerConfig{RetryBase: 10 * time.Millisecond}, flaky)
	submit(t, s.env.Bus, "default", "redelivered", events.WorkflowSubmitted{Plan: plan(step("A", "flaky"))})
	if end := last(t, collect(t, s.env.Bus, "default", "redelivered")); end.Type != events.TypeComplete {
		t.Fatalf("workflow ended %s", end.Type)
	}
	ss := spansUntil(t, exp, "two runs", func(ss tracetest.SpanStubs) bool {
		return len(named(ss, "step run")) == 2 && len(named(ss, "workflow completed")) == 1
	})
	st := named(ss, "step flaky")
	if len(st) != 1 {
		t.Fatalf("want one dispatch of the step:\n%s", dump(ss))
	}
	runs := childrenOf(ss, st[0], "step run")
	if len(runs) != 2 {
		t.Fatalf("want two runs under the step:\n%s", dump(ss))
	}
	byDelivery := map[int64]tracetest.SpanStub{}
	for _, r := range runs {
		byDelivery[attr(r, "agentbus.step.delivery").AsInt64()] = r
	}
	r1, r2 := byDelivery[1], byDelivery[2]
	if r1.Status.Code != codes.Error || !strings.Contains(r1.Status.Description, "first delivery fails") || attr(r1, "agentbus.step.redelivered").AsBool() {
		t.Errorf("first run: status %+v, redelivered %v", r1.Status, attr(r1, "agentbus.step.redelivered").AsBool())
	}
	if r2.Status.Code == codes.Error || !attr(r2, "agentbus.step.redelivered").AsBool() {
		t.Errorf("second run: status %+v, redelivered %v", r2.Status, attr(r2, "agentbus.step.redelivered").AsBool())
	}
	if len(childrenOf(ss, st[0], "step queue")) != 2 {
		t.Errorf("want a queue span per delivery:\n%s", dump(ss))
	}
}

func TestTraceCanceledWorkflowEndsInError(t *testing.T) {
	exp, tp := memoryTracer()
	block := newFn("block", func(ctx context.Context, _ agents.Request) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s := startTraced(t, tp, agents.WorkerConfig{}, block)
	submit(t, s.env.Bus, "default", "to-cancel", events.WorkflowSubmitted{Plan: plan(step("A", "block"), step("B", "echo", "A"))})
	waitFor(t, "step A running", func() bool { return block.calls.Load() == 1 })
	if res := control(t, s.env.Bus, "default", "to-cancel", events.Control{Action: events.ActionCancel, Reason: "user changed their mind"}); !res.Applied {
		t.Fatalf("cancel: %+v", res)
	}
	ss := spansUntil(t, exp, "the cancel", func(ss tracetest.SpanStubs) bool {
		return len(named(ss, "workflow canceled")) == 1 && len(named(ss, "step run")) == 1
	})
	for _, name := range []string{"workflow canceled", "step run"} {
		sp := named(ss, name)[0]
		if sp.Status.Code != codes.Error || !strings.Contains(sp.Status.Description, "user changed their mind") {
			t.Errorf("%s: status %+v, want error with the reason", name, sp.Status)
		}
	}
	root := named(ss, "workflow submit")[0]
	if named(ss, "workflow canceled")[0].Parent.SpanID() != root.SpanContext.SpanID() {
		t.Errorf("the cancel is not under the submission:\n%s", dump(ss))
	}
	if len(named(ss, "step echo")) != 0 {
		t.Errorf("step B was dispatched after the cancel:\n%s", dump(ss))
	}
}

func TestTraceApprovalWaitIsASpanUnderItsStep(t *testing.T) {
	exp, tp := memoryTracer()
	judge := newFn("judge", func(_ context.Context, req agents.Request) (json.RawMessage, error) { return req.Input, nil })
	s := startTraced(t, tp, agents.WorkerConfig{}, judge)
	in, _ := json.Marshal(map[string]float64{"confidence": 0.4})
	submit(t, s.env.Bus, "default", "appr", events.WorkflowSubmitted{Plan: plan(
		events.PlanStep{ID: "J", Capability: "judge", Input: in, RequiresApproval: true}, step("after", "echo", "J"))})
	waitFor(t, "the approval wait", func() bool {
		cp, err := s.orch.Checkpoint(t.Context(), "default", "appr")
		return err == nil && cp.Status == events.StateInputRequired
	})
	if res := control(t, s.env.Bus, "default", "appr", events.Control{Action: events.ActionApprove, Reason: "looks right"}); !res.Applied {
		t.Fatalf("approve: %+v", res)
	}
	if end := last(t, collect(t, s.env.Bus, "default", "appr")); end.Type != events.TypeComplete {
		t.Fatalf("workflow ended %s", end.Type)
	}
	ss := spansUntil(t, exp, "the approval", func(ss tracetest.SpanStubs) bool {
		return len(named(ss, "step approval")) == 1 && len(named(ss, "workflow completed")) == 1
	})
	a, st := named(ss, "step approval")[0], named(ss, "step judge")
	if len(st) != 1 || a.Parent.SpanID() != st[0].SpanContext.SpanID() {
		t.Fatalf("the approval wait is not under its step's span:\n%s", dump(ss))
	}
	if attr(a, "agentbus.step.approval").AsString() != workflow.ApprovalApproved || !a.EndTime.After(a.StartTime) {
		t.Errorf("approval span %v from %s to %s", a.Attributes, a.StartTime, a.EndTime)
	}
}
