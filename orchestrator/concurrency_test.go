package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/sessions"
	"github.com/agentbus/agentbus/subjects"
)

// keyed is a one-step sleeper with a concurrency key.
func keyed(ms int, c *events.Concurrency) events.WorkflowSubmitted {
	sub := sleeper(ms, 0)
	sub.Concurrency = c
	return sub
}

// turn is a one-step sleeper that is a turn of a session.
func turn(ms int, session, doubleText string) events.WorkflowSubmitted {
	sub := sleeper(ms, 0)
	sub.Query, sub.SessionID, sub.DoubleText = "turn", session, doubleText
	return sub
}

// span is when a workflow ran: its step's dispatch to its terminal event.
type span struct {
	id         string
	start, end time.Time
	waited     bool
	steps      int // completed step statuses
	ended      events.Type
}

func spanOf(t *testing.T, id string, rs []bus.Record) span {
	t.Helper()
	s := span{id: id, ended: last(t, rs).Type, end: last(t, rs).Time}
	for _, r := range rs {
		var st events.Status
		if r.Envelope.Type != events.TypeStatus || json.Unmarshal(r.Envelope.Data, &st) != nil {
			continue
		}
		switch {
		case st.StepID == "s" && st.State == events.StateWorking && s.start.IsZero():
			s.start = r.Envelope.Time
		case st.StepID == "s" && st.State == events.StateCompleted:
			s.steps++
		case strings.Contains(st.Message, "waiting for concurrency key"):
			s.waited = true
		}
	}
	return s
}

// waitRunning follows a workflow's events until its step is dispatched.
func waitRunning(t *testing.T, b *bus.Bus, tenant, wf string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := b.Follow(ctx, tenant, wf, 0, func(_ context.Context, r bus.Record) error {
		var st events.Status
		if r.Envelope.Type == events.TypeStatus && json.Unmarshal(r.Envelope.Data, &st) == nil && st.StepID == "s" && st.State == events.StateWorking {
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s never ran: %v", wf, err)
	}
}

func reasonOf(t *testing.T, rs []bus.Record) string {
	t.Helper()
	e := last(t, rs)
	var c events.Cancelled
	if e.Type != events.TypeCancelled || json.Unmarshal(e.Data, &c) != nil {
		t.Fatalf("ended with %s %s, not cancelled", e.Type, e.Data)
	}
	return c.Reason
}

// TestConcurrencyKeyQueue: ten submissions with one key and limit 1, on
// a worker with ten slots, run one at a time in full: no two overlap, all
// ten complete, each step once.
func TestConcurrencyKeyQueue(t *testing.T) {
	env := flowStack(t, 10, orchestrator.Config{})
	const n, ms = 10, 100
	key := &events.Concurrency{Key: "user:ada@example.com"}
	began := time.Now()
	for i := range n {
		submit(t, env.Bus, "acme", fmt.Sprintf("q-%d", i), keyed(ms, key))
	}
	var spans []span
	waited := 0
	for i := range n {
		id := fmt.Sprintf("q-%d", i)
		s := spanOf(t, id, collect(t, env.Bus, "acme", id))
		if s.ended != events.TypeComplete || s.steps != 1 {
			t.Fatalf("%s ended %s with %d completed steps", id, s.ended, s.steps)
		}
		if s.waited {
			waited++
		}
		spans = append(spans, s)
	}
	took := time.Since(began)
	slices.SortFunc(spans, func(a, b span) int { return a.start.Compare(b.start) })
	for i := 1; i < len(spans); i++ {
		if spans[i].start.Before(spans[i-1].end) {
			t.Errorf("%s started at %s, before %s ended at %s", spans[i].id, spans[i].start.Format(time.StampMilli), spans[i-1].id, spans[i-1].end.Format(time.StampMilli))
		}
	}
	if waited < n-2 {
		t.Errorf("only %d of %d waited for the key", waited, n)
	}
	if took < n*ms*time.Millisecond {
		t.Errorf("%d one-at-a-time runs of %d ms took %s", n, ms, took)
	}
	t.Logf("%d workflows of %d ms, one key, limit 1: %d waited, %s in all, none overlapped", n, ms, waited, took.Round(time.Millisecond))
	// Nothing runs or waits under the key any more: its entry is gone.
	kv, err := env.Bus.Concurrency(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	k, _ := subjects.ConcurrencyKey("acme", key.Key)
	waitFor(t, "the key's entry deleted", func() bool {
		_, err := kv.Get(context.Background(), k)
		return errors.Is(err, bus.ErrNotFound)
	})

	// Limit 3: never more than three at once, all complete.
	key3 := &events.Concurrency{Key: "three", Limit: 3}
	for i := range n {
		submit(t, env.Bus, "acme", fmt.Sprintf("l3-%d", i), keyed(ms, key3))
	}
	spans = spans[:0]
	for i := range n {
		id := fmt.Sprintf("l3-%d", i)
		s := spanOf(t, id, collect(t, env.Bus, "acme", id))
		if s.ended != events.TypeComplete || s.steps != 1 {
			t.Fatalf("%s ended %s with %d completed steps", id, s.ended, s.steps)
		}
		spans = append(spans, s)
	}
	most := 0
	for _, a := range spans {
		at := 0
		for _, b := range spans {
			if !b.start.After(a.start) && b.end.After(a.start) {
				at++
			}
		}
		most = max(most, at)
	}
	if most > 3 {
		t.Errorf("%d ran at once under limit 3", most)
	}
	t.Logf("limit 3: at most %d at once", most)
}

// TestConcurrencyKeyCancelNewest: over the limit, the new workflow is
// created canceled, saying why; the running one is untouched.
func TestConcurrencyKeyCancelNewest(t *testing.T) {
	env := flowStack(t, 4, orchestrator.Config{})
	key := &events.Concurrency{Key: "k", Policy: events.ConcurrencyCancelNewest}
	submit(t, env.Bus, "acme", "first", keyed(1500, key))
	waitRunning(t, env.Bus, "acme", "first")
	submit(t, env.Bus, "acme", "second", keyed(10, key))
	if why := reasonOf(t, collect(t, env.Bus, "acme", "second")); !strings.Contains(why, `concurrency key "k" has 1 running (limit 1, policy cancel_newest)`) {
		t.Fatalf("second canceled because %q", why)
	}
	if s := spanOf(t, "first", collect(t, env.Bus, "acme", "first")); s.ended != events.TypeComplete {
		t.Fatalf("first ended %s", s.ended)
	}
	// The slot is free again: a third one runs.
	submit(t, env.Bus, "acme", "third", keyed(10, key))
	if s := spanOf(t, "third", collect(t, env.Bus, "acme", "third")); s.ended != events.TypeComplete {
		t.Fatalf("third ended %s", s.ended)
	}
}

// TestConcurrencyKeyCancelInProgress: the running one is canceled (its
// step stopped on the worker) and the new one runs.
func TestConcurrencyKeyCancelInProgress(t *testing.T) {
	env := flowStack(t, 4, orchestrator.Config{})
	key := &events.Concurrency{Key: "k", Policy: events.ConcurrencyCancelInProgress}
	submit(t, env.Bus, "acme", "old", keyed(30_000, key))
	waitRunning(t, env.Bus, "acme", "old")
	began := time.Now()
	submit(t, env.Bus, "acme", "new", keyed(10, key))
	if why := reasonOf(t, collect(t, env.Bus, "acme", "old")); !strings.Contains(why, `workflow new took its slot of concurrency key "k"`) {
		t.Fatalf("old canceled because %q", why)
	}
	s := spanOf(t, "new", collect(t, env.Bus, "acme", "new"))
	if s.ended != events.TypeComplete {
		t.Fatalf("new ended %s", s.ended)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("the new one waited %s for the old", took)
	}
}

// TestCancelInProgressAfterACrash: an orchestrator that died between
// taking a running workflow's slot for a cancel_in_progress submission
// and canceling it left the key saying so; the submission's redelivery
// cancels the preempted workflow then, instead of letting it run on
// uncounted, and the key forgets the preemption.
func TestCancelInProgressAfterACrash(t *testing.T) {
	env := flowStack(t, 4, orchestrator.Config{})
	key := &events.Concurrency{Key: "k", Policy: events.ConcurrencyCancelInProgress}
	submit(t, env.Bus, "acme", "old", keyed(30_000, key))
	waitRunning(t, env.Bus, "acme", "old")
	ctx := context.Background()
	kv, err := env.Bus.KV(ctx, subjects.BucketConcurrency)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := subjects.ConcurrencyKey("acme", "k")
	// The key as the crash left it: "new" holds the slot, "old" is to be
	// canceled, and nothing canceled it.
	if _, err := kv.Put(ctx, k, []byte(`{"key":"k","limit":1,"running":["new"],"waiting":[],"preempting":[{"by":"new","ids":["old"]}]}`)); err != nil {
		t.Fatal(err)
	}
	submit(t, env.Bus, "acme", "new", keyed(10, key)) // the redelivery
	if why := reasonOf(t, collect(t, env.Bus, "acme", "old")); !strings.Contains(why, `workflow new took its slot of concurrency key "k"`) {
		t.Fatalf("old canceled because %q", why)
	}
	if s := spanOf(t, "new", collect(t, env.Bus, "acme", "new")); s.ended != events.TypeComplete {
		t.Fatalf("new ended %s", s.ended)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, bus.ErrNotFound) || err == nil && !strings.Contains(string(e.Value), "preempting") {
			break // forgotten (the entry goes once nothing runs under the key)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the key still records the preemption: %s %v", e.Value, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConcurrencyGauges: the checkpoint scan's lease holder reports how
// many workflows wait for and hold concurrency keys' slots, by tenant.
func TestConcurrencyGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := orchestrator.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	env := flowStack(t, 4, orchestrator.Config{Metrics: m, ScanInterval: 50 * time.Millisecond})
	key := &events.Concurrency{Key: "k", Limit: 1}
	submit(t, env.Bus, "acme", "first", keyed(60_000, key)) // runs until canceled below
	waitRunning(t, env.Bus, "acme", "first")                // so that second waits for it
	submit(t, env.Bus, "acme", "second", keyed(10, key))
	await := func(waiting, running float64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second) // scan passes under make test's load
		for {
			w, wok := gauge(t, reg, "agentbus_orchestrator_concurrency_waiting_workflows")
			r, rok := gauge(t, reg, "agentbus_orchestrator_concurrency_running_workflows")
			if wok && rok && w == waiting && r == running {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("gauges waiting %v running %v, want %v and %v", w, r, waiting, running)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	await(1, 1)
	if res := control(t, env.Bus, "acme", "first", events.Control{Action: events.ActionCancel}); !res.Applied {
		t.Fatalf("cancel of first: %+v", res)
	}
	collect(t, env.Bus, "acme", "second")
	await(0, 0)
}

// gauge is the value of a gauge of one series in reg, if it has one yet.
func gauge(t *testing.T, reg *prometheus.Registry, name string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestSessionDoubleText: a session's turn submitted while another runs
// waits (enqueue), cancels it (interrupt: its turn kept, canceled;
// rollback: its turn dropped), or is canceled itself (reject).
func TestSessionDoubleText(t *testing.T) {
	env := flowStack(t, 4, orchestrator.Config{})
	store, err := sessions.New(sessions.Config{Bus: env.Bus})
	if err != nil {
		t.Fatal(err)
	}
	turns := func(session string) []events.Turn {
		t.Helper()
		s, err := store.Load(t.Context(), "acme", "", session)
		if err != nil {
			t.Fatal(err)
		}
		return s.Turns
	}
	t.Run("enqueue", func(t *testing.T) {
		submit(t, env.Bus, "acme", "e-1", turn(300, "se", events.DoubleTextEnqueue))
		waitRunning(t, env.Bus, "acme", "e-1")
		submit(t, env.Bus, "acme", "e-2", turn(10, "se", events.DoubleTextEnqueue))
		first := spanOf(t, "e-1", collect(t, env.Bus, "acme", "e-1"))
		second := spanOf(t, "e-2", collect(t, env.Bus, "acme", "e-2"))
		if first.ended != events.TypeComplete || second.ended != events.TypeComplete || !second.waited || second.start.Before(first.end) {
			t.Fatalf("first %+v, second %+v", first, second)
		}
		waitFor(t, "two turns", func() bool { return len(turns("se")) == 2 })
	})
	t.Run("interrupt", func(t *testing.T) {
		submit(t, env.Bus, "acme", "i-1", turn(30_000, "si", events.DoubleTextInterrupt))
		waitRunning(t, env.Bus, "acme", "i-1")
		submit(t, env.Bus, "acme", "i-2", turn(10, "si", events.DoubleTextInterrupt))
		if why := reasonOf(t, collect(t, env.Bus, "acme", "i-1")); !strings.Contains(why, `interrupted by a newer turn of session "si" (workflow i-2`) {
			t.Fatalf("i-1 canceled because %q", why)
		}
		if s := spanOf(t, "i-2", collect(t, env.Bus, "acme", "i-2")); s.ended != events.TypeComplete {
			t.Fatalf("i-2 ended %s", s.ended)
		}
		waitFor(t, "both turns", func() bool { return len(turns("si")) == 2 })
		if ts := turns("si"); ts[0].WorkflowID != "i-1" || ts[0].Status != events.StateCanceled || ts[1].Status != events.StateCompleted {
			t.Fatalf("turns %+v", ts)
		}
	})
	t.Run("rollback", func(t *testing.T) {
		submit(t, env.Bus, "acme", "r-1", turn(30_000, "sr", events.DoubleTextRollback))
		waitRunning(t, env.Bus, "acme", "r-1")
		submit(t, env.Bus, "acme", "r-2", turn(10, "sr", events.DoubleTextRollback))
		if why := reasonOf(t, collect(t, env.Bus, "acme", "r-1")); !strings.Contains(why, "dropped from the session") {
			t.Fatalf("r-1 canceled because %q", why)
		}
		if s := spanOf(t, "r-2", collect(t, env.Bus, "acme", "r-2")); s.ended != events.TypeComplete {
			t.Fatalf("r-2 ended %s", s.ended)
		}
		waitFor(t, "the new turn", func() bool { return len(turns("sr")) >= 1 })
		if ts := turns("sr"); len(ts) != 1 || ts[0].WorkflowID != "r-2" {
			t.Fatalf("turns %+v: the rolled back one is kept", ts)
		}
	})
	t.Run("reject", func(t *testing.T) {
		submit(t, env.Bus, "acme", "j-1", turn(1500, "sj", events.DoubleTextReject))
		waitRunning(t, env.Bus, "acme", "j-1")
		submit(t, env.Bus, "acme", "j-2", turn(10, "sj", events.DoubleTextReject))
		if why := reasonOf(t, collect(t, env.Bus, "acme", "j-2")); !strings.Contains(why, `rejected: session "sj" has a turn running (j-1)`) {
			t.Fatalf("j-2 canceled because %q", why)
		}
		if s := spanOf(t, "j-1", collect(t, env.Bus, "acme", "j-1")); s.ended != events.TypeComplete {
			t.Fatalf("j-1 ended %s", s.ended)
		}
	})
}

// TestResumeRetakesTheKey: a keyed workflow that failed gave its slot up;
// resuming it while another holds the key (limit 1) is refused, saying
// why, and applies once the key is free again.
func TestResumeRetakesTheKey(t *testing.T) {
	env := flowStack(t, 4, orchestrator.Config{})
	key := &events.Concurrency{Key: "k"}
	timedOut := keyed(3000, key)
	timedOut.TimeoutMS = 200
	submit(t, env.Bus, "acme", "a", timedOut)
	if end := last(t, collect(t, env.Bus, "acme", "a")); end.Type != events.TypeError {
		t.Fatalf("a ended %s, want a timeout", end.Type)
	}
	submit(t, env.Bus, "acme", "b", keyed(1500, key))
	waitRunning(t, env.Bus, "acme", "b")
	res := control(t, env.Bus, "acme", "a", events.Control{Action: events.ActionResume})
	if res.Applied || !strings.Contains(res.Message, `not resumed: concurrency key "k" has 1 running (limit 1)`) {
		t.Fatalf("resume while b holds the key: %+v", res)
	}
	if end := last(t, collect(t, env.Bus, "acme", "b")); end.Type != events.TypeComplete {
		t.Fatalf("b ended %s", end.Type)
	}
	waitFor(t, "resume applied once b ended", func() bool {
		return control(t, env.Bus, "acme", "a", events.Control{Action: events.ActionResume}).Applied
	})
}
