package orchestrator

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// A stored submission past the bound is the reconciler's only when the
// submissions consumer holds it (delivered, never acked): one the consumer
// has not reached yet waits in a backlog, and is left alone.
func TestReconcilerLeavesABacklogAlone(t *testing.T) {
	env := bustest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := env.Bus.EnsureConsumer(ctx, bus.ConsumeConfig{Stream: subjects.StreamWorkflows, Durable: subjects.ConsumerSubmissions,
		Filter: subjects.AllSubmissions, AckWait: time.Hour, MaxDeliver: -1}); err != nil {
		t.Fatal(err)
	}
	o := newTestOrchestrator(t, env, Config{SubmitBound: time.Millisecond, Catalog: func(context.Context, string) (bool, error) { return true, nil }})
	subj, _ := subjects.Submit("default")
	key := events.SubmitKey("default", "queued")
	e, err := events.New(events.TypeWorkflowSubmitted, key, events.SourceGateway, "default", "queued", "",
		events.WorkflowSubmitted{Plan: &events.Plan{Steps: []events.PlanStep{{ID: "a", Capability: "echo"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Bus.Publish(ctx, subj, e, key); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second) // past the bound, with no waiting
	r, err := o.reconcileSubmissions(ctx, later)
	if err != nil || r.Read != 1 || r.Queued != 1 || r.Started != 0 {
		t.Fatalf("queued submission: %+v, %v; want it read and left queued", r, err)
	}
	if _, _, err := o.load(ctx, "default", "queued"); !isNotFound(err) {
		t.Fatalf("a queued submission was started: %v", err)
	}
	// Delivered and never acked: now it is held, and started.
	c, err := env.Bus.JetStream().Consumer(ctx, subjects.StreamWorkflows, subjects.ConsumerSubmissions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(jetstream.FetchMaxWait(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	r, err = o.reconcileSubmissions(ctx, later)
	if err != nil || r.Started != 1 {
		t.Fatalf("held submission: %+v, %v; want it started", r, err)
	}
	if _, _, err := o.load(ctx, "default", "queued"); err != nil {
		t.Fatalf("the held submission has no checkpoint: %v", err)
	}
}
