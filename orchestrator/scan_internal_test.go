package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
	engine "github.com/agentbus/agentbus/workflow"
)

func newTestOrchestrator(t *testing.T, env *bustest.Env, cfg Config) *Orchestrator {
	t.Helper()
	cfg.Bus, cfg.Logger = env.Bus, bustest.Logger(t)
	o, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// putFinished stores n finished workflows' checkpoints, as revisions for
// the scan to read.
func putFinished(t *testing.T, o *Orchestrator, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		cp := engine.New(engine.Start{TenantID: "default", WorkflowID: fmt.Sprintf("done-%d", i)}, time.Now().UTC())
		cp.Status, cp.Phase = events.StateCompleted, engine.PhaseDone
		b, _ := json.Marshal(cp)
		key, _ := subjects.CheckpointKey(cp.TenantID, cp.WorkflowID)
		if _, err := o.checkpoints.Put(context.Background(), key, b); err != nil {
			t.Fatal(err)
		}
	}
}

// Each pass reads at most ScanBudget revisions, and the next goes on where
// it stopped, until every revision old enough was read once.
func TestScanIsBoundedAndResumes(t *testing.T) {
	env := bustest.New(t)
	o := newTestOrchestrator(t, env, Config{StepLease: time.Millisecond, ScanBudget: 10})
	putFinished(t, o, 0, 25)
	time.Sleep(2 * time.Millisecond) // let the last revision come of age (StepLease)
	ctx := context.Background()
	total := 0
	for pass := 1; ; pass++ {
		r, err := o.scan.once(ctx)
		if err != nil || !r.Held {
			t.Fatalf("pass %d: %+v, %v; want the lease held", pass, r, err)
		}
		if r.Read > 10 {
			t.Fatalf("pass %d read %d revisions, above the budget of 10", pass, r.Read)
		}
		total += r.Read
		if r.Read == 0 {
			if total != 25 || pass != 4 {
				t.Fatalf("read %d revisions in %d passes, want 25 in 3 (and an empty fourth)", total, pass)
			}
			break
		}
		if r.Examined != 0 {
			t.Fatalf("pass %d examined %d finished workflows", pass, r.Examined)
		}
	}
}

// A finished workflow whose end was stored and not published (its
// orchestrator died in between, after a cancel that no one sends again)
// has its outbox published by the scan, terminal event and all, and
// cleared: followers see it end.
func TestScanPublishesAFinishedWorkflowsStrandedOutbox(t *testing.T) {
	env := bustest.New(t)
	o := newTestOrchestrator(t, env, Config{StepLease: time.Millisecond})
	ctx := context.Background()
	now := time.Now().UTC()
	cp := engine.New(engine.Start{TenantID: "default", WorkflowID: "ended"}, now)
	cp.Status, cp.Phase = events.StateCanceled, engine.PhaseDone
	data, err := json.Marshal(events.Cancelled{Reason: "by a user"})
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := subjects.Events(cp.TenantID, cp.WorkflowID)
	cp.Outbox = []engine.Outgoing{{Subject: subj, MsgID: "default/ended/9", Type: events.TypeCancelled, Time: now, Data: data}}
	stored, err := o.store(cp)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := subjects.CheckpointKey(cp.TenantID, cp.WorkflowID)
	if _, err := o.checkpoints.Put(ctx, key, stored); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // the revision comes of age (StepLease)
	if r, err := o.scan.once(ctx); err != nil || r.Healed != 1 {
		t.Fatalf("scan: %+v, %v; want the finished workflow healed", r, err)
	}
	found, _, err := o.bus.FindMsgID(ctx, subjects.StreamEvents, subj, func(id string) bool { return id == "default/ended/9" }, 10)
	if err != nil || !found {
		t.Fatalf("cancelled event stored %v (%v): want it published", found, err)
	}
	after, _, err := o.loadFrom(ctx, cp.TenantID, cp.WorkflowID, true)
	if err != nil || len(after.Outbox) != 0 || after.Status != events.StateCanceled {
		t.Fatalf("checkpoint after the scan: outbox %v, status %s (%v); want it cleared, still cancelled", after.Outbox, after.Status, err)
	}
}

// One orchestrator at a time holds the scan's lease; another takes it over,
// with its cursor, once the holder has been silent for three intervals.
func TestScanLeaseHasOneHolderAndPassesOn(t *testing.T) {
	env := bustest.New(t)
	cfg := Config{StepLease: time.Millisecond}
	first, second := newTestOrchestrator(t, env, cfg), newTestOrchestrator(t, env, cfg)
	putFinished(t, first, 0, 5)
	time.Sleep(2 * time.Millisecond)
	ctx := context.Background()
	held := func(o *Orchestrator, want bool, what string) scanReport {
		t.Helper()
		r, err := o.scan.once(ctx)
		if err != nil || r.Held != want {
			t.Fatalf("%s: held=%v err=%v, want held=%v", what, r.Held, err, want)
		}
		return r
	}
	if r := held(first, true, "the first to ask"); r.Read != 5 {
		t.Fatalf("first pass read %d revisions, want 5", r.Read)
	}
	held(second, false, "the second while the first renews")
	held(first, true, "the holder again")
	held(second, false, "the second again")

	putFinished(t, first, 5, 3)
	time.Sleep(2 * time.Millisecond)
	// The holder has been silent for longer than the second waits: a
	// second that takes over at once.
	second.scan.lease = bus.NewLease(second.leases, subjects.LeaseScan, "second", 0)
	if r := held(second, true, "the second once the holder went silent"); r.Read != 3 {
		t.Fatalf("the pass after the takeover read %d revisions, want the 3 after the holder's cursor", r.Read)
	}
	held(first, false, "the former holder")
}

// BenchmarkScanPass measures one full pass of the checkpoint scan over
// 20,000 finished workflows' revisions (its default budget): the headers
// read, a value read for each key's newest revision, and the lease written.
func BenchmarkScanPass(b *testing.B) {
	env := bustest.New(b)
	cfg := Config{StepLease: time.Millisecond, Bus: env.Bus, Logger: bustest.Logger(b)}
	o, err := New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	const n = 20000
	cp := engine.New(engine.Start{TenantID: "default", WorkflowID: "x", Query: "a finished workflow"}, time.Now().UTC())
	cp.Status, cp.Phase = events.StateCompleted, engine.PhaseDone
	cp.Plan = events.Plan{Steps: []events.PlanStep{{ID: "A", Capability: "echo"}, {ID: "B", Capability: "echo", DependsOn: []string{"A"}}}}
	cp.Tasks = map[string]*engine.Task{"A": {Capability: "echo", Status: events.StateCompleted, Attempt: 1, Output: json.RawMessage(`"some output of a step"`)},
		"B": {Capability: "echo", Status: events.StateCompleted, Attempt: 1, Output: json.RawMessage(`"some output of a step"`)}}
	value, _ := json.Marshal(cp)
	ctx := context.Background()
	for i := range n {
		if _, err := o.checkpoints.Put(ctx, fmt.Sprintf("default.done-%d", i), value); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(2 * time.Millisecond)
	b.ReportMetric(float64(len(value)), "value-bytes")
	b.ResetTimer()
	for b.Loop() {
		if err := o.leases.Delete(ctx, subjects.LeaseScan); err != nil && !isNotFound(err) {
			b.Fatal(err)
		}
		r, err := o.scan.once(ctx)
		if err != nil || r.Read != n {
			b.Fatalf("pass read %d revisions, %v; want %d", r.Read, err, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "revisions/s")
}
