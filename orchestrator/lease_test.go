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

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/subjects"
	engine "github.com/agentbus/agentbus/workflow"
)

// The tests in this file lose messages the way a JetStream server killed
// before it flushed does — a step request, a reply, a timer, a
// submission's trigger vanish after the server acknowledged them — by
// deleting them from their streams at a chosen moment, and show that every
// workflow completes anyway with each step recorded completed once.

// testLease is the step lease of these tests: short, but long enough that
// a -race run on a busy machine never mistakes a slow step for a lost one
// (it would not matter: the step would run twice and be recorded once).
const testLease = time.Second

// watchdogOnly has the watchdog's timer alone find what was lost: the scan
// is there, but does not come round within a test.
var watchdogOnly = orchestrator.Config{StepLease: testLease, ScanInterval: time.Hour}

// startOrchestrator runs an orchestrator with cfg (Bus and Logger filled
// in) until the returned stop is called or the test ends.
func startOrchestrator(t testing.TB, env *bustest.Env, cfg orchestrator.Config) (o *orchestrator.Orchestrator, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg.Bus, cfg.Logger = env.Bus, bustest.Logger(t)
	o, err := orchestrator.New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return o, stop
}

// startEcho runs a worker serving echo until the test ends.
func startEcho(t testing.TB, env *bustest.Env) {
	t.Helper()
	runWorker(t, env, agents.WorkerConfig{}, echo.Agent{})
}

// served makes capability's shared step consumer exist with no worker
// behind it, as a worker's would (same settings): the orchestrator accepts
// plans that need it, and its requests wait until a worker comes.
func served(t testing.TB, env *bustest.Env, capability string) {
	t.Helper()
	durable, _ := subjects.StepConsumer(capability)
	filter, _ := subjects.StepFilter(capability)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := env.Bus.EnsureConsumer(ctx, bus.ConsumeConfig{
		Stream: subjects.StreamSteps, Durable: durable, Filter: filter, AckWait: 30 * time.Second, Concurrency: 8, MaxDeliver: -1,
	}); err != nil {
		t.Fatal(err)
	}
}

// checkpointWhen waits until the workflow's checkpoint satisfies cond and
// returns it.
func checkpointWhen(t *testing.T, o *orchestrator.Orchestrator, wf, what string, cond func(*engine.Checkpoint) bool) *engine.Checkpoint {
	t.Helper()
	var cp *engine.Checkpoint
	waitFor(t, wf+": "+what, func() bool {
		c, err := o.Checkpoint(context.Background(), "default", wf)
		if err == nil && cond(c) {
			cp = c
			return true
		}
		return false
	})
	return cp
}

// stored returns the message stored on subject in stream with Nats-Msg-Id
// id, waiting for it to be there.
func stored(t *testing.T, env *bustest.Env, stream, subject, id string) *jetstream.RawStreamMsg {
	t.Helper()
	var found *jetstream.RawStreamMsg
	waitFor(t, fmt.Sprintf("%s stored in %s", id, stream), func() bool {
		found = lookup(t, env, stream, subject, id)
		return found != nil
	})
	return found
}

// lookup returns the message stored on subject in stream with Nats-Msg-Id
// id (any, if id is empty), or nil.
func lookup(t *testing.T, env *bustest.Env, stream, subject, id string) *jetstream.RawStreamMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := env.Bus.JetStream().Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); ; {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		if id == "" || m.Header.Get(nats.MsgIdHdr) == id {
			return m
		}
		seq = m.Sequence + 1
	}
}

// lose deletes a message the server acknowledged, as a server that died
// before it flushed loses it.
func lose(t *testing.T, env *bustest.Env, stream string, m *jetstream.RawStreamMsg) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := env.Bus.JetStream().Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, m.Sequence); err != nil {
		t.Fatalf("lose %s sequence %d: %v", stream, m.Sequence, err)
	}
}

func diamond() *events.Plan {
	return plan(step("A", "echo"), step("B", "echo", "A"), step("C", "echo", "A"), step("D", "echo", "B", "C"))
}

// completedOnce checks that the workflow completed with every step recorded
// completed exactly once, in its checkpoint and in its event stream, and
// that each step ran the given number of attempts (1 if not named).
func completedOnce(t *testing.T, o *orchestrator.Orchestrator, workflow string, rs []bus.Record, attempts map[string]int) {
	t.Helper()
	if end := last(t, rs); end.Type != events.TypeComplete {
		t.Fatalf("%s ended %s, want complete:%s", workflow, end.Type.Short(), describe(rs))
	}
	cp, err := o.Checkpoint(context.Background(), "default", workflow)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, id := range cp.ExecutionOrder {
		seen[id]++
	}
	for id, task := range cp.Tasks {
		if task.Status != events.StateCompleted || seen[id] != 1 {
			t.Errorf("step %s is %s and appears %d times in the execution order %v, want completed once", id, task.Status, seen[id], cp.ExecutionOrder)
		}
		want := attempts[id]
		if want == 0 {
			want = 1
		}
		if task.Attempt != want {
			t.Errorf("step %s ran %d attempts, want %d", id, task.Attempt, want)
		}
		n := 0
		for _, st := range statuses(rs, id) {
			if st.State == events.StateCompleted {
				n++
			}
		}
		if n != 1 {
			t.Errorf("step %s has %d completed status events, want 1:%s", id, n, describe(rs))
		}
	}
}

func TestLostStepRequestIsDispatchedAgain(t *testing.T) {
	t.Parallel() // waits on leases, not on the CPU
	env := bustest.New(t)
	served(t, env, "echo")
	o, _ := startOrchestrator(t, env, watchdogOnly)
	submit(t, env.Bus, "default", "lost-request", events.WorkflowSubmitted{Plan: diamond()})
	checkpointWhen(t, o, "lost-request", "A dispatched and its sequence noted", func(cp *engine.Checkpoint) bool {
		return cp.Tasks["A"].Status == events.StateWorking && cp.Tasks["A"].StepSeq > 0
	})
	subj, _ := subjects.Step("default", "echo")
	lose(t, env, subjects.StreamSteps, stored(t, env, subjects.StreamSteps, subj, events.StepKey("default", "lost-request", "A", 1)))
	startEcho(t, env) // only now: no worker took the request before it was lost

	rs := collect(t, env.Bus, "default", "lost-request")
	completedOnce(t, o, "lost-request", rs, map[string]int{"A": 2})
	var again bool
	for _, st := range statuses(rs, "A") {
		again = again || strings.Contains(st.Message, "dispatched again as attempt 2")
	}
	if !again {
		t.Errorf("no event says A was dispatched again:%s", describe(rs))
	}
}

// replyLost runs A of a diamond while no orchestrator is running, loses
// its reply (and its watchdog timer too, when timer is set), and restarts the
// orchestrator: with its scan when the timer is lost, else without. It
// returns the new orchestrator.
func replyLost(t *testing.T, env *bustest.Env, workflow string, timer bool) *orchestrator.Orchestrator {
	t.Helper()
	served(t, env, "echo")
	cfg := watchdogOnly
	if timer {
		cfg = orchestrator.Config{StepLease: testLease}
	}
	o, stop := startOrchestrator(t, env, cfg)
	submit(t, env.Bus, "default", workflow, events.WorkflowSubmitted{Plan: diamond()})
	checkpointWhen(t, o, workflow, "A dispatched", func(cp *engine.Checkpoint) bool {
		return cp.Tasks["A"].Status == events.StateWorking && len(cp.Outbox) == 0
	})
	stop()
	startEcho(t, env)
	key := events.StepKey("default", workflow, "A", 1)
	replies, _ := subjects.Reply("default", workflow)
	reply := stored(t, env, subjects.StreamReplies, replies, key)
	steps, _ := subjects.Step("default", "echo")
	waitFor(t, "A's request acked", func() bool { return lookup(t, env, subjects.StreamSteps, steps, key) == nil })
	lose(t, env, subjects.StreamReplies, reply)
	if timer {
		// The watchdog's timer waits as a schedule on the watch subject.
		watch, _ := subjects.Watch("default", workflow)
		lose(t, env, subjects.StreamTimers, stored(t, env, subjects.StreamTimers, watch, ""))
	}
	o, _ = startOrchestrator(t, env, cfg)
	return o
}

func TestLostReplyIsFoundByTheStepLease(t *testing.T) {
	t.Parallel() // waits on leases, not on the CPU
	env := bustest.New(t)
	o := replyLost(t, env, "lost-reply", false)
	completedOnce(t, o, "lost-reply", collect(t, env.Bus, "default", "lost-reply"), map[string]int{"A": 2})
}

func TestLostReplyAndTimerAreFoundByTheScan(t *testing.T) {
	t.Parallel() // waits on leases, not on the CPU
	env := bustest.New(t)
	o := replyLost(t, env, "lost-timer", true)
	completedOnce(t, o, "lost-timer", collect(t, env.Bus, "default", "lost-timer"), map[string]int{"A": 2})
}

// A checkpoint was stored with its first dispatches in its outbox, and then
// both the orchestrator (before it published them) and the submission (the
// trigger that would have published them on redelivery) were lost. Only
// the scan can find it.
func TestStrandedOutboxIsPublishedByTheScan(t *testing.T) {
	t.Parallel() // waits on leases, not on the CPU
	first := bustest.New(t)
	served(t, first, "echo")
	o1, _ := startOrchestrator(t, first, orchestrator.Config{StepLease: -1})
	submit(t, first.Bus, "default", "stranded", events.WorkflowSubmitted{Plan: diamond()})
	checkpointWhen(t, o1, "stranded", "created", func(*engine.Checkpoint) bool { return true })
	revs, err := o1.History(context.Background(), "default", "stranded")
	if err != nil || len(revs) == 0 || len(revs[0].Checkpoint.Outbox) == 0 {
		t.Fatalf("History = %d revisions, %v; want the first with its outbox", len(revs), err)
	}
	created, _ := json.Marshal(revs[0].Checkpoint)

	env := bustest.New(t)
	kv, err := env.Bus.KV(context.Background(), subjects.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := subjects.CheckpointKey("default", "stranded")
	if _, err := kv.Create(context.Background(), key, created); err != nil {
		t.Fatal(err)
	}
	startEcho(t, env)
	o, _ := startOrchestrator(t, env, orchestrator.Config{StepLease: testLease})
	completedOnce(t, o, "stranded", collect(t, env.Bus, "default", "stranded"), nil)
}

// An attempt given up as lost may answer after all: its reply is recorded
// if it comes first, and the reply of the attempt dispatched after it is
// then ignored; a failure of an attempt given up does not fail the step.
func TestLateReplyOfAnAttemptGivenUpIsRecordedOnce(t *testing.T) {
	t.Parallel() // waits on leases, not on the CPU
	env := bustest.New(t)
	served(t, env, "echo")
	o, _ := startOrchestrator(t, env, watchdogOnly)
	const wf = "late"
	submit(t, env.Bus, "default", wf, events.WorkflowSubmitted{Plan: plan(step("A", "echo"), step("B", "echo", "A"))})
	steps, _ := subjects.Step("default", "echo")
	giveUp := func(id string) {
		checkpointWhen(t, o, wf, id+" dispatched", func(cp *engine.Checkpoint) bool {
			return cp.Tasks[id].Status == events.StateWorking && cp.Tasks[id].StepSeq > 0
		})
		lose(t, env, subjects.StreamSteps, stored(t, env, subjects.StreamSteps, steps, events.StepKey("default", wf, id, 1)))
		checkpointWhen(t, o, wf, id+" dispatched again", func(cp *engine.Checkpoint) bool { return cp.Tasks[id].Attempt == 2 })
	}
	replies, _ := subjects.Reply("default", wf)
	answer := func(typ events.Type, id string, attempt int, payload any) {
		t.Helper()
		key := events.StepKey("default", wf, id, attempt)
		e, err := events.New(typ, key, events.SourceAgentPrefix+"echo", "default", wf, id, payload)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Bus.Publish(context.Background(), replies, e, key); err != nil {
			t.Fatal(err)
		}
		// Handled once the orchestrator acked it: the stream lets it go.
		waitFor(t, key+" handled", func() bool { return lookup(t, env, subjects.StreamReplies, replies, key) == nil })
	}
	done := func(id string, attempt int) events.StepCompleted {
		out, _ := json.Marshal(fmt.Sprintf("%s from attempt %d", id, attempt))
		return events.StepCompleted{StepID: id, Capability: "echo", Attempt: attempt, Output: out, Worker: fmt.Sprintf("w%d", attempt)}
	}

	giveUp("A")
	answer(events.TypeStepCompleted, "A", 1, done("A", 1)) // late, but first: recorded
	answer(events.TypeStepCompleted, "A", 2, done("A", 2)) // second: ignored
	cp := checkpointWhen(t, o, wf, "B dispatched", func(cp *engine.Checkpoint) bool { return cp.Tasks["B"].Status == events.StateWorking })
	if got := string(cp.Tasks["A"].Output); got != `"A from attempt 1"` {
		t.Errorf("A's output = %s, want attempt 1's", got)
	}

	giveUp("B")
	answer(events.TypeStepFailed, "B", 1, events.StepFailed{StepID: "B", Capability: "echo", Attempt: 1, Error: "late failure"})
	if cp, _ := o.Checkpoint(context.Background(), "default", wf); cp.Tasks["B"].Status != events.StateWorking {
		t.Fatalf("B is %s after a failure of the attempt given up, want working (attempt 2 runs)", cp.Tasks["B"].Status)
	}
	answer(events.TypeStepCompleted, "B", 2, done("B", 2))
	answer(events.TypeStepCompleted, "B", 1, done("B", 1)) // after the step completed: ignored

	rs := collect(t, env.Bus, "default", wf)
	completedOnce(t, o, wf, rs, map[string]int{"A": 2, "B": 2})
	cp, _ = o.Checkpoint(context.Background(), "default", wf)
	if a, b := string(cp.Tasks["A"].Output), string(cp.Tasks["B"].Output); a != `"A from attempt 1"` || b != `"B from attempt 2"` {
		t.Errorf("outputs A=%s B=%s, want A's attempt 1 and B's attempt 2", a, b)
	}
}

// Timers wait on a consumer of their own: more of them than the 256
// unacknowledged messages Consume's consumers once allowed — here the
// deadlines of 300 workflows whose
// step nobody serves, beside their watchdog timers — must not hold up any
// reply.
func TestWaitingTimersDoNotStallReplies(t *testing.T) {
	env := bustest.New(t)
	served(t, env, "stuck")
	startEcho(t, env)
	o, _ := startOrchestrator(t, env, orchestrator.Config{StepLease: time.Hour})
	const n = 300
	for i := range n {
		submit(t, env.Bus, "default", fmt.Sprintf("waiting-%d", i), events.WorkflowSubmitted{Plan: plan(step("A", "stuck")), TimeoutMS: 3_600_000})
	}
	checkpointWhen(t, o, fmt.Sprintf("waiting-%d", n-1), "dispatched", func(cp *engine.Checkpoint) bool {
		return cp.Tasks["A"].Status == events.StateWorking
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	timers, err := env.Bus.JetStream().Consumer(ctx, subjects.StreamTimers, subjects.ConsumerTimers)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every deadline waiting", func() bool {
		info, err := timers.Info(ctx)
		return err == nil && info.NumAckPending >= n
	})
	start := time.Now()
	submit(t, env.Bus, "default", "through", events.WorkflowSubmitted{Plan: diamond()})
	completedOnce(t, o, "through", collect(t, env.Bus, "default", "through"), nil)
	t.Logf("a diamond completed in %s beside %d waiting deadlines", time.Since(start).Round(time.Millisecond), n)
}

// A step whose every attempt is lost (an agent that answers where no
// orchestrator reads) is not dispatched forever: the fifth loss in a row
// fails it, saying why.
func TestStepLostTooOftenFails(t *testing.T) {
	t.Parallel() // waits on leases, not on the CPU
	env := bustest.New(t)
	served(t, env, "echo")
	o, _ := startOrchestrator(t, env, watchdogOnly)
	const wf = "lost-again"
	submit(t, env.Bus, "default", wf, events.WorkflowSubmitted{Plan: plan(step("A", "echo"))})
	steps, _ := subjects.Step("default", "echo")
	for attempt := 1; attempt <= 5; attempt++ {
		checkpointWhen(t, o, wf, fmt.Sprintf("attempt %d dispatched", attempt), func(cp *engine.Checkpoint) bool {
			return cp.Tasks["A"].Attempt == attempt && cp.Tasks["A"].StepSeq > 0
		})
		lose(t, env, subjects.StreamSteps, stored(t, env, subjects.StreamSteps, steps, events.StepKey("default", wf, "A", attempt)))
	}
	rs := collect(t, env.Bus, "default", wf)
	end := last(t, rs)
	var e events.Error
	if end.Type != events.TypeError || json.Unmarshal(end.Data, &e) != nil || e.StepID != "A" || !strings.Contains(e.Message, "5 attempts in a row") {
		t.Fatalf("ended %s %s, want step A failed after 5 lost attempts:%s", end.Type.Short(), end.Data, describe(rs))
	}
}

// The watchdog's timer is kept by the server, not by an orchestrator: armed
// before the server restarts (on the same store, with every orchestrator
// gone), it still finds the step request lost afterwards.
func TestWatchdogTimerOutlivesAServerRestart(t *testing.T) {
	t.Parallel() // waits on leases, not on the CPU
	before := bustest.New(t)
	served(t, before, "echo")
	o, stop := startOrchestrator(t, before, watchdogOnly)
	const wf = "restarted"
	submit(t, before.Bus, "default", wf, events.WorkflowSubmitted{Plan: diamond()})
	checkpointWhen(t, o, wf, "A dispatched", func(cp *engine.Checkpoint) bool {
		return cp.Tasks["A"].Status == events.StateWorking && cp.Tasks["A"].StepSeq > 0 && len(cp.Outbox) == 0
	})
	stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := before.Server.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	env := bustest.NewWithOptions(t, bustest.Options{Dir: before.Dir})
	steps, _ := subjects.Step("default", "echo")
	lose(t, env, subjects.StreamSteps, stored(t, env, subjects.StreamSteps, steps, events.StepKey("default", wf, "A", 1)))
	startEcho(t, env)
	o, _ = startOrchestrator(t, env, watchdogOnly)
	completedOnce(t, o, wf, collect(t, env.Bus, "default", wf), map[string]int{"A": 2})
}

// An outbox stored by an orchestrator from before November 2026, whose
// event ids were "<tenant>/<workflow>/event/<n>", and partly published
// before that orchestrator died, is published again by a new one with the
// ids it was stored with: the event already stored is stored once, and the
// workflow's later events take the new ids.
func TestOutboxFromBeforeTheEventKeyChange(t *testing.T) {
	t.Parallel() // waits on leases, not on the CPU
	first := bustest.New(t)
	served(t, first, "echo")
	o1, _ := startOrchestrator(t, first, orchestrator.Config{StepLease: -1})
	const wf = "upgraded"
	submit(t, first.Bus, "default", wf, events.WorkflowSubmitted{Plan: diamond()})
	checkpointWhen(t, o1, wf, "created", func(*engine.Checkpoint) bool { return true })
	revs, err := o1.History(context.Background(), "default", wf)
	if err != nil || len(revs) == 0 || len(revs[0].Checkpoint.Outbox) == 0 {
		t.Fatalf("History = %d revisions, %v; want the first with its outbox", len(revs), err)
	}
	cp := revs[0].Checkpoint
	prefix := "default/" + wf + "/"
	var oldEvent *engine.Outgoing
	for i := range cp.Outbox {
		o := &cp.Outbox[i]
		if n, ok := strings.CutPrefix(o.MsgID, prefix); ok && !strings.Contains(n, "/") {
			o.MsgID = prefix + "event/" + n
			if oldEvent == nil {
				oldEvent = o
			}
		}
	}
	if oldEvent == nil {
		t.Fatalf("no event in the first outbox: %+v", cp.Outbox)
	}
	created, _ := json.Marshal(cp)

	env := bustest.New(t)
	kv, err := env.Bus.KV(context.Background(), subjects.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := subjects.CheckpointKey("default", wf)
	if _, err := kv.Create(context.Background(), key, created); err != nil {
		t.Fatal(err)
	}
	// The old orchestrator got as far as its first event.
	e, err := events.New(oldEvent.Type, oldEvent.MsgID, events.SourceOrchestrator, "default", wf, oldEvent.StepID, oldEvent.Data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Bus.Publish(context.Background(), oldEvent.Subject, e, oldEvent.MsgID); err != nil {
		t.Fatal(err)
	}
	startEcho(t, env)
	o, _ := startOrchestrator(t, env, orchestrator.Config{StepLease: testLease})
	rs := collect(t, env.Bus, "default", wf)
	completedOnce(t, o, wf, rs, nil)
	ids, contents := map[string]int{}, map[string]int{}
	for _, r := range rs {
		ids[r.Envelope.ID]++
		// An event republished under another id would be stored twice.
		c := string(r.Envelope.Type) + "|" + r.Envelope.StepID + "|" + string(r.Envelope.Data)
		if contents[c]++; contents[c] > 1 {
			t.Errorf("event stored twice: %s", c)
		}
	}
	if ids[oldEvent.MsgID] != 1 {
		t.Errorf("the event published before the crash, %s, is stored %d times:%s", oldEvent.MsgID, ids[oldEvent.MsgID], describe(rs))
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("event %s stored %d times", id, n)
		}
	}
	if end := last(t, rs); end.ID != events.EventKey("default", wf, cpEventCount(t, o, wf)-1) {
		t.Errorf("the complete event's id is %s, want the new form", end.ID)
	}
}

// cpEventCount is the workflow's checkpoint's event count.
func cpEventCount(t *testing.T, o *orchestrator.Orchestrator, wf string) int {
	t.Helper()
	cp, err := o.Checkpoint(context.Background(), "default", wf)
	if err != nil {
		t.Fatal(err)
	}
	return cp.EventCount
}
