package orchestrator

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	engine "github.com/agentbus/agentbus/workflow"
)

// TestKeyStateDecide: each policy's decision on a key's state, and that
// a repeated acquire (a redelivered submission) finds its place.
func TestKeyStateDecide(t *testing.T) {
	q := keyPolicy{Concurrency: events.Concurrency{Key: "k", Limit: 1}}
	var st keyState
	if g := st.decide("a", q); g.Wait != "" || !slices.Equal(st.Running, []string{"a"}) {
		t.Fatalf("first: %+v %+v", g, st)
	}
	if g := st.decide("b", q); g.Wait != `waiting for concurrency key "k": 1 running (limit 1), 0 waiting ahead` {
		t.Fatalf("second: %+v", g)
	}
	if g := st.decide("b", q); g.Wait == "" || len(st.Waiting) != 1 {
		t.Fatalf("second again: %+v %+v", g, st)
	}
	newest := q
	newest.Policy = events.ConcurrencyCancelNewest
	if g := st.decide("c", newest); g.Cancel == "" || slices.Contains(st.Waiting, "c") {
		t.Fatalf("cancel_newest: %+v %+v", g, st)
	}
	inProgress := q
	inProgress.Policy = events.ConcurrencyCancelInProgress
	if g := st.decide("d", inProgress); !slices.Equal(g.Preempt, []string{"a"}) || !slices.Equal(st.Running, []string{"d"}) {
		t.Fatalf("cancel_in_progress: %+v %+v", g, st)
	}
	st.drop("d")
	if started := st.fill(); !slices.Equal(started, []string{"b"}) || !slices.Equal(st.Running, []string{"b"}) {
		t.Fatalf("fill: %v %+v", started, st)
	}
}

// TestConcurrencyRepair: a release lost to a crash (the ended workflow
// still holds the key's slot, a waiting one never started) is repaired by
// the checkpoint scan's look at the ended workflow.
func TestConcurrencyRepair(t *testing.T) {
	env := bustest.New(t)
	o := newTestOrchestrator(t, env, Config{})
	ctx := context.Background()
	c := events.Concurrency{Key: "k", Limit: 1}
	store := func(cp *engine.Checkpoint) {
		b, _ := json.Marshal(cp)
		key, _ := subjects.CheckpointKey(cp.TenantID, cp.WorkflowID)
		if _, err := o.checkpoints.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
	}
	ended := engine.New(engine.Start{TenantID: "acme", WorkflowID: "ended", Concurrency: &c}, time.Now().UTC())
	if _, err := engine.Apply(ended, engine.Planned{Plan: events.Plan{Steps: []events.PlanStep{{ID: "s", Capability: "echo"}}}}, time.Now(), engine.Policy{}); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Apply(ended, engine.Cancel{}, time.Now(), engine.Policy{}); err != nil {
		t.Fatal(err)
	}
	ended.Outbox = nil
	store(ended)
	waiting := engine.New(engine.Start{TenantID: "acme", WorkflowID: "waiting", Concurrency: &c}, time.Now().UTC())
	if _, err := engine.Apply(waiting, engine.Planned{Plan: events.Plan{Steps: []events.PlanStep{{ID: "s", Capability: "echo"}}}, Wait: "waiting"}, time.Now(), engine.Policy{}); err != nil {
		t.Fatal(err)
	}
	waiting.Outbox = nil
	store(waiting)
	// The state as the crash left it: the ended one still holds the slot.
	if err := o.updateKey(ctx, "acme", "k", func(st *keyState) bool {
		*st = keyState{Key: "k", Limit: 1, Running: []string{"ended"}, Waiting: []string{"waiting"}}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	// The scan looks at the waiting one first: nothing to do yet but
	// find the ended holder.
	if err := o.repairWaiting(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	cp, _, err := o.load(ctx, "acme", "waiting")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Status != events.StateWorking || cp.Tasks["s"].Status != events.StateWorking {
		t.Fatalf("after the repair the waiting workflow is %s (%s), step %s", cp.Status, cp.Phase, cp.Tasks["s"].Status)
	}
	// Released again (the ended one's look): nothing more happens.
	if err := o.release(ctx, "acme", "ended", c, true); err != nil {
		t.Fatal(err)
	}
	var st keyState
	_ = o.updateKey(ctx, "acme", "k", func(s *keyState) bool { st = *s; return false })
	if !slices.Equal(st.Running, []string{"waiting"}) || len(st.Waiting) != 0 {
		t.Fatalf("key state %+v", st)
	}
}
