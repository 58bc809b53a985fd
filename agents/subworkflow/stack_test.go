package subworkflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/subflow"
	"github.com/agentbus/agentbus/agents/subworkflow"
	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/internal/stacktest"
)

// deadline bounds every wait; nothing sleeps.
const deadline = 30 * time.Second

// fn is an agent serving one capability with a function.
type fn struct {
	name  string
	calls atomic.Int64
	run   func(ctx context.Context, req agents.Request) (json.RawMessage, error)
}

func (a *fn) Card() agents.Card {
	return agents.Card{Name: a.name, Version: "1.0.0", Capabilities: []string{a.name}, Description: "test agent " + a.name}
}

func (a *fn) Handle(ctx context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
	a.calls.Add(1)
	return a.run(ctx, req)
}

// counted counts the runs of the sub-workflow agent.
type counted struct {
	*subworkflow.Agent
	calls atomic.Int64
}

func (a *counted) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	a.calls.Add(1)
	return a.Agent.Handle(ctx, req, emit)
}

// world is a running agentbus serving capability "workflow" and the
// given agents.
type world struct {
	env   *bustest.Env
	c     *client.Client
	agent *counted
}

func start(t *testing.T, cfg subworkflow.Config, list ...agents.Agent) *world {
	t.Helper()
	env := bustest.New(t)
	cfg.Bus, cfg.Logger = env.Bus, bustest.Logger(t)
	ag, err := subworkflow.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{env: env, agent: &counted{Agent: ag}}
	stacktest.StartOn(t, env, stacktest.Options{Agents: append([]agents.Agent{w.agent}, list...)})
	if w.c, err = client.NewNATS(env.Bus, client.NATSConfig{}); err != nil {
		t.Fatal(err)
	}
	return w
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// parentPlan is a plan of one workflow step with input.
func parentPlan(input string) *events.Plan {
	return &events.Plan{Steps: []events.PlanStep{{ID: "sub", Capability: subworkflow.Capability, Input: json.RawMessage(input)}}}
}

// submit submits a workflow as a NATS submitter does, which may name
// its user and role.
func (w *world) submit(t *testing.T, wf string, sub events.WorkflowSubmitted) {
	t.Helper()
	if _, err := api.Submit(ctxT(t), w.env.Bus, "/test", "default", wf, sub); err != nil {
		t.Fatal(err)
	}
}

// events of a workflow until its end.
func (w *world) events(t *testing.T, wf string) []events.Envelope {
	t.Helper()
	var out []events.Envelope
	err := w.env.Bus.Follow(ctxT(t), "default", wf, 0, func(_ context.Context, r bus.Record) error {
		out = append(out, r.Envelope)
		if r.Envelope.Type.Terminal() {
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("following %s: %v", wf, err)
	}
	return out
}

// TestPlanChild: a workflow step runs its plan as a child workflow that
// inherits the parent's user, role and priority and names it in its
// metadata; the step's output is the child's result and id.
func TestPlanChild(t *testing.T) {
	double := &fn{name: "double", run: func(_ context.Context, req agents.Request) (json.RawMessage, error) {
		var v struct{ N int }
		_ = json.Unmarshal(req.Input, &v)
		return json.Marshal(map[string]any{"n": 2 * v.N, "user": req.User, "role": req.Role, "query": req.Query})
	}}
	w := start(t, subworkflow.Config{}, double)
	ctx := ctxT(t)
	w.submit(t, "parent-1", events.WorkflowSubmitted{Query: "double 21", User: "ada", Role: "admin", Priority: events.PriorityHighest,
		Plan: parentPlan(`{"plan":{"steps":[{"id":"d","capability":"double","input":{"n":21}}]},"metadata":{"purpose":"test"},"timeout":"1m"}`)})
	res, err := w.c.Wait(ctx, "parent-1")
	if err != nil {
		t.Fatalf("the parent: %v", err)
	}
	var out subworkflow.Output
	if err := json.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.ChildWorkflowID, "sw-") || out.Attached {
		t.Fatalf("output %s", res.Result)
	}
	var r struct {
		N                 int
		User, Role, Query string
	}
	if err := json.Unmarshal(out.Result, &r); err != nil || r.N != 42 || r.User != "ada" || r.Role != "admin" || r.Query != "double 21" {
		t.Fatalf("the child's result %s (%v): want n 42 for ada as admin, with the parent's query", out.Result, err)
	}
	cp, err := w.c.State(ctx, out.ChildWorkflowID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{subflow.MetadataParentWorkflow: "parent-1", subflow.MetadataParentStep: "sub", subflow.MetadataDepth: "1", "purpose": "test"}
	for k, v := range want {
		if cp.Metadata[k] != v {
			t.Fatalf("the child's metadata %v, want %v", cp.Metadata, want)
		}
	}
	if cp.Priority != events.PriorityHighest || cp.User != "ada" || cp.Role != "admin" || cp.Deadline == nil {
		t.Fatalf("the child: priority %d, user %q, role %q, deadline %v: want the parent's, and a deadline", cp.Priority, cp.User, cp.Role, cp.Deadline)
	}
}

// TestNested: a child whose plan has a workflow step of its own starts a
// grandchild at depth 2; a workflow already at the bound cannot start a
// child, and its step fails at once, naming the bound.
func TestNested(t *testing.T) {
	w := start(t, subworkflow.Config{MaxDepth: 2})
	ctx := ctxT(t)
	w.submit(t, "nest", events.WorkflowSubmitted{Query: "nest",
		Plan: parentPlan(`{"plan":{"steps":[{"id":"inner","capability":"workflow","input":{"plan":{"steps":[{"id":"e","capability":"echo","input":{"text":"deep"}}]}}}]}}`)})
	res, err := w.c.Wait(ctx, "nest")
	if err != nil {
		t.Fatalf("the parent: %v", err)
	}
	var outer, inner subworkflow.Output
	if err := json.Unmarshal(res.Result, &outer); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(outer.Result, &inner); err != nil || inner.ChildWorkflowID == "" {
		t.Fatalf("the child's result %s: want the grandchild's output", outer.Result)
	}
	cp, err := w.c.State(ctx, inner.ChildWorkflowID)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Metadata[subflow.MetadataDepth] != "2" || cp.Metadata[subflow.MetadataParentWorkflow] != outer.ChildWorkflowID {
		t.Fatalf("the grandchild's metadata %v: want depth 2 and parent %s", cp.Metadata, outer.ChildWorkflowID)
	}

	w.submit(t, "too-deep", events.WorkflowSubmitted{Query: "deep", Metadata: map[string]string{subflow.MetadataDepth: "2"},
		Plan: parentPlan(`{"query":"echo hello"}`)})
	_, err = w.c.Wait(ctx, "too-deep")
	if we := (*client.WorkflowError)(nil); !errors.As(err, &we) || !strings.Contains(err.Error(), "nested too deep") {
		t.Fatalf("a workflow at the bound: %v, want a failure naming the depth bound", err)
	}
}

// TestChildFailureFailsTheStep: a child that fails fails the parent's
// step at once (not retried), with the child's error code and message.
func TestChildFailureFailsTheStep(t *testing.T) {
	boom := &fn{name: "boom", run: func(context.Context, agents.Request) (json.RawMessage, error) {
		return nil, errors.New("the boiler exploded")
	}}
	w := start(t, subworkflow.Config{}, boom)
	ctx := ctxT(t)
	w.submit(t, "fails", events.WorkflowSubmitted{Query: "boom", Plan: parentPlan(`{"plan":{"steps":[{"id":"b","capability":"boom"}]}}`)})
	_, err := w.c.Wait(ctx, "fails")
	var we *client.WorkflowError
	if !errors.As(err, &we) || we.StepID != "sub" || !strings.Contains(we.Message, "the boiler exploded") || !strings.Contains(we.Message, "sw-") {
		t.Fatalf("the parent: %v, want its step sub failed with the child's error", err)
	}
	if n := w.agent.calls.Load(); n != 1 {
		t.Fatalf("the workflow step ran %d times, want once", n)
	}
	t.Logf("the parent's error: %v", err)
}

// TestCancelParentCancelsChild: canceling the parent while its child
// runs cancels the child: the child's running step's context ends and the
// child ends canceled.
func TestCancelParentCancelsChild(t *testing.T) {
	started, stopped := make(chan string, 1), make(chan struct{})
	var once sync.Once
	gate := &fn{name: "gate", run: func(ctx context.Context, req agents.Request) (json.RawMessage, error) {
		once.Do(func() { started <- req.WorkflowID })
		<-ctx.Done()
		close(stopped)
		return nil, ctx.Err()
	}}
	w := start(t, subworkflow.Config{}, gate)
	ctx := ctxT(t)
	w.submit(t, "cancel-me", events.WorkflowSubmitted{Query: "wait", Plan: parentPlan(`{"plan":{"steps":[{"id":"g","capability":"gate"}]}}`)})
	var child string
	select {
	case child = <-started:
	case <-ctx.Done():
		t.Fatal("the child's step never started")
	}
	if res, err := w.c.Cancel(ctx, "cancel-me", "enough"); err != nil || !res.Applied {
		t.Fatalf("cancel: %+v %v", res, err)
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("the child's step's context never ended")
	}
	if evs := w.events(t, child); evs[len(evs)-1].Type != events.TypeCancelled {
		t.Fatalf("the child %s ended %s, want canceled", child, evs[len(evs)-1].Type)
	}
	if evs := w.events(t, "cancel-me"); evs[len(evs)-1].Type != events.TypeCancelled {
		t.Fatalf("the parent ended %s, want canceled", evs[len(evs)-1].Type)
	}
}

// TestRedeliveryReattaches: a run of the step stopped as a stopping
// worker stops it leaves the child running; a second run of the same
// step attempt (its redelivery) follows that child to its end instead of
// starting another.
func TestRedeliveryReattaches(t *testing.T) {
	release := make(chan struct{})
	started := make(chan string, 2)
	gate := &fn{name: "gate", run: func(ctx context.Context, req agents.Request) (json.RawMessage, error) {
		started <- req.WorkflowID
		select {
		case <-release:
			return json.RawMessage(`"released"`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	held := make(chan struct{}, 1)
	hold := &fn{name: "hold", run: func(ctx context.Context, _ agents.Request) (json.RawMessage, error) {
		held <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	w := start(t, subworkflow.Config{}, gate, hold)
	ctx := ctxT(t)
	// The parent exists (its checkpoint is read); its own step is held.
	w.submit(t, "parent-r", events.WorkflowSubmitted{Query: "held", Plan: &events.Plan{Steps: []events.PlanStep{{ID: "h", Capability: "hold"}}}})
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the parent's step never started")
	}
	req := agents.Request{TenantID: "default", WorkflowID: "parent-r", StepID: "sub", Capability: subworkflow.Capability, Attempt: 1, Delivery: 1,
		Query: "held", Input: json.RawMessage(`{"plan":{"steps":[{"id":"g","capability":"gate"}]}}`)}
	first, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := w.agent.Handle(first, req, nopEmitter{})
		errc <- err
	}()
	var child string
	select {
	case child = <-started:
	case <-ctx.Done():
		t.Fatal("the child's step never started")
	}
	stop() // as a worker stopping past its grace does
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the first run: %v, want canceled", err)
	}
	req.Delivery = 2
	done := make(chan struct{})
	var out json.RawMessage
	var err error
	go func() {
		defer close(done)
		out, err = w.agent.Handle(ctx, req, nopEmitter{})
	}()
	close(release)
	<-done
	if err != nil {
		t.Fatalf("the second run: %v", err)
	}
	var o subworkflow.Output
	if err := json.Unmarshal(out, &o); err != nil || o.ChildWorkflowID != child || !o.Attached || string(o.Result) != `"released"` {
		t.Fatalf("the second run: %s (%v): want child %s's result, attached", out, err, child)
	}
	if n := gate.calls.Load(); n != 1 {
		t.Fatalf("the child's step ran %d times, want once", n)
	}
	// A third run, after the child ended, reads its end from its checkpoint.
	out, err = w.agent.Handle(ctx, req, nopEmitter{})
	if err != nil || !strings.Contains(string(out), child) {
		t.Fatalf("a run after the child ended: %s %v", out, err)
	}
}

type nopEmitter struct{}

func (nopEmitter) Progress(context.Context, float64, string) error { return nil }
func (nopEmitter) Artifact(context.Context, string, string, any, bool, bool) error {
	return nil
}
