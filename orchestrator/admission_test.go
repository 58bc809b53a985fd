package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/subjects"
)

// flowStack is a server, one worker serving sleep with slots steps at once,
// and an orchestrator configured by cfg.
func flowStack(t testing.TB, slots int, cfg orchestrator.Config) *bustest.Env {
	return flowStackN(t, 1, slots, cfg)
}

// flowStackN is flowStack with n workers of slots each, every one on a
// connection of its own as separate processes would be.
func flowStackN(t testing.TB, n, slots int, cfg orchestrator.Config) *bustest.Env {
	t.Helper()
	env := bustest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	log := bustest.Logger(t)
	for i := range n {
		b := env.Bus
		if i > 0 {
			b = connect(t, env)
		}
		w, err := agents.NewWorker(agents.WorkerConfig{Bus: b, Agents: []agents.Agent{sleep.Agent{}}, Logger: log, Concurrency: slots})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx) }()
	}
	cfg.Bus, cfg.Logger = env.Bus, log
	o, err := orchestrator.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
	return env
}

// sleeper is a one-step workflow sleeping ms at a priority.
func sleeper(ms, priority int) events.WorkflowSubmitted {
	in, _ := json.Marshal(sleep.Input{MS: int64(ms)})
	return events.WorkflowSubmitted{Priority: priority, Plan: &events.Plan{Steps: []events.PlanStep{{ID: "s", Capability: sleep.Capability, Input: in}}}}
}

// tally counts the workflows that completed, by tenant, in the order
// their complete events were published, and fails on a workflow that
// completes twice.
type tally struct {
	t     testing.TB
	mu    sync.Mutex
	order []string // "<tenant>/<workflow>"
	seen  map[string]bool
	at    map[string]time.Time
}

func watchCompletions(t testing.TB, env *bustest.Env) *tally {
	t.Helper()
	nc, err := nats.Connect(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	tl := &tally{t: t, seen: map[string]bool{}, at: map[string]time.Time{}}
	_, err = nc.Subscribe("agentbus.*.events.*", func(m *nats.Msg) {
		if m.Header.Get(events.HeaderType) != string(events.TypeComplete) {
			return
		}
		key := m.Header.Get(events.HeaderTenant) + "/" + m.Header.Get(events.HeaderWorkflow)
		tl.mu.Lock()
		defer tl.mu.Unlock()
		if tl.seen[key] {
			t.Errorf("%s completed twice", key)
		}
		tl.seen[key] = true
		tl.at[key] = time.Now()
		tl.order = append(tl.order, key)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return tl
}

// count returns how many workflows of tenant completed, and in all.
func (tl *tally) count(tenant string) int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	n := 0
	for _, k := range tl.order {
		if len(k) > len(tenant) && k[:len(tenant)+1] == tenant+"/" {
			n++
		}
	}
	return n
}

// await waits until tenant has n completed workflows.
func (tl *tally) await(tenant string, n int, within time.Duration) {
	tl.t.Helper()
	deadline := time.Now().Add(within)
	for tl.count(tenant) < n {
		if time.Now().After(deadline) {
			tl.t.Fatalf("%s: %d of %d workflows completed within %s", tenant, tl.count(tenant), n, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFairShareAmongTenants: a quiet tenant's workflows, submitted behind
// a noisy tenant's backlog on the same capability, run in a fair share of
// the workers, not after the backlog. Without flow control they wait for
// all of it, which shows the test can fail.
func TestFairShareAmongTenants(t *testing.T) {
	const noisy, quiet, stepMS, slots = 160, 8, 20, 4
	for _, c := range []struct {
		name string
		off  bool
	}{{"fair", false}, {"flow-control-off", true}} {
		t.Run(c.name, func(t *testing.T) {
			env := flowStack(t, slots, orchestrator.Config{FlowControlOff: c.off})
			tl := watchCompletions(t, env)
			for i := range noisy {
				submit(t, env.Bus, "noisy", fmt.Sprintf("n%d", i), sleeper(stepMS, 0))
			}
			tl.await("noisy", slots, 20*time.Second) // the capability is busy
			// Every noisy submission is planned: quiet's must not wait
			// behind them in the submissions stream, which is not what
			// this test measures.
			drained(t, env, subjects.StreamWorkflows)
			start := tl.count("noisy")
			for i := range quiet {
				submit(t, env.Bus, "quiet", fmt.Sprintf("q%d", i), sleeper(stepMS, 0))
			}
			tl.await("quiet", quiet, 30*time.Second)
			ahead := tl.count("noisy") - start
			tl.await("noisy", noisy, 30*time.Second)
			t.Logf("quiet's %d workflows finished while %d of noisy's %d waiting ones did", quiet, ahead, noisy-start)
			// A fair share: about as many of noisy's as of quiet's, and
			// those already waiting for a worker or running (twice the
			// slots and minWindow more, and the slots).
			switch fair := 2*quiet + 3*slots + 2; {
			case !c.off && ahead > fair:
				t.Errorf("quiet's %d workflows finished after %d more of noisy's: not a fair share (want at most %d)", quiet, ahead, fair)
			case c.off && ahead < (noisy-start)*3/4:
				t.Errorf("without flow control quiet finished after only %d of noisy's %d waiting: the test does not show the backlog", ahead, noisy-start)
			}
		})
	}
}

// drained waits until a work-queue stream holds no message.
func drained(t testing.TB, env *bustest.Env, stream string) {
	t.Helper()
	nc, err := nats.Connect(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := js.Stream(context.Background(), stream)
		if err == nil && s.CachedInfo().State.Msgs == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not drained within 20s (%v)", stream, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPriorityWithinATenant: a priority-5 workflow submitted behind its
// tenant's backlog of priority-1 steps runs within about one round of the
// workers.
func TestPriorityWithinATenant(t *testing.T) {
	const backlog, stepMS, slots = 120, 20, 4
	env := flowStack(t, slots, orchestrator.Config{})
	tl := watchCompletions(t, env)
	for i := range backlog {
		submit(t, env.Bus, "solo", fmt.Sprintf("low%d", i), sleeper(stepMS, events.PriorityLowest))
	}
	tl.await("solo", slots, 20*time.Second)
	drained(t, env, subjects.StreamWorkflows)
	before := tl.count("solo")
	submit(t, env.Bus, "solo", "urgent", sleeper(stepMS, events.PriorityHighest))
	deadline := time.Now().Add(20 * time.Second)
	for {
		tl.mu.Lock()
		done := tl.seen["solo/urgent"]
		tl.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the urgent workflow did not complete")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Ahead of it: the requests already waiting for a worker (the slots
	// and minWindow more) and those running.
	if passed := tl.count("solo") - 1 - before; passed > 4*slots {
		t.Errorf("%d priority-1 workflows completed between the urgent one's submission and its completion; want at most %d", passed, 4*slots)
	} else {
		t.Logf("%d priority-1 workflows completed while the urgent one waited", passed)
	}
	tl.await("solo", backlog+1, 30*time.Second)
}

// TestTenantWeights: two tenants saturating one capability share it in
// proportion to their weights (3:1).
func TestTenantWeights(t *testing.T) {
	const each, stepMS, slots = 120, 10, 4
	env := flowStack(t, slots, orchestrator.Config{TenantWeights: map[string]int{"heavy": 3}})
	tl := watchCompletions(t, env)
	// A third tenant makes the capability busy first, so that both
	// tenants' steps wait for admission from the start.
	for i := range 3 * slots {
		submit(t, env.Bus, "warm", fmt.Sprintf("w%d", i), sleeper(stepMS*5, 0))
	}
	for i := range each {
		submit(t, env.Bus, "heavy", fmt.Sprintf("h%d", i), sleeper(stepMS, 0))
		submit(t, env.Bus, "light", fmt.Sprintf("l%d", i), sleeper(stepMS, 0))
	}
	drained(t, env, subjects.StreamWorkflows)
	tl.await("heavy", each, 30*time.Second)
	tl.await("light", each, 30*time.Second)
	// While both had steps waiting: the completions until heavy's last.
	tl.mu.Lock()
	heavy, light := 0, 0
	for _, k := range tl.order {
		switch k[:5] {
		case "heavy":
			heavy++
		case "light":
			light++
		}
		if heavy == each {
			break
		}
	}
	tl.mu.Unlock()
	ratio := float64(heavy) / float64(max(light, 1))
	t.Logf("by heavy's last completion: heavy %d, light %d (%.2f:1)", heavy, light, ratio)
	if ratio < 2.4 || ratio > 3.8 {
		t.Errorf("heavy:light = %d:%d = %.2f, want 3 ± 20%%", heavy, light, ratio)
	}
}

// TestRateLimit: a tenant's steps of a capability are admitted at its
// rate, each waiting one told so by a progress event; none fails.
func TestRateLimit(t *testing.T) {
	const n, rate = 40, 20.0
	env := flowStack(t, 8, orchestrator.Config{Limits: map[string]orchestrator.Limit{orchestrator.LimitKey("metered", "*"): {PerSecond: rate}}})
	tl := watchCompletions(t, env)
	throttled := make(chan string, n)
	nc, err := nats.Connect(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Subscribe("agentbus.metered.events.*", func(m *nats.Msg) {
		var p events.Progress
		if m.Header.Get(events.HeaderType) == string(events.TypeProgress) && json.Unmarshal(m.Data, &p) == nil && p.ThrottledUntil != nil {
			throttled <- m.Header.Get(events.HeaderWorkflow)
		}
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range n {
		submit(t, env.Bus, "metered", fmt.Sprintf("m%d", i), sleeper(1, 0))
	}
	tl.await("metered", n, 30*time.Second)
	took := time.Since(start)
	// A burst of a tenth of a second's worth, then one every 1/rate.
	if want := time.Duration(float64(n-2) / rate * float64(time.Second) * 0.9); took < want {
		t.Errorf("%d steps at %g/s took %s, want at least %s", n, rate, took.Round(time.Millisecond), want)
	}
	if len(throttled) == 0 {
		t.Error("no progress event said a step was throttled")
	}
	t.Logf("%d steps at %g/s took %s; %d throttled notes", n, rate, took.Round(time.Millisecond), len(throttled))
}

// TestMaxInFlight: a tenant limited to 2 steps of a capability in flight
// runs its steps two at a time though the workers have more slots.
func TestMaxInFlight(t *testing.T) {
	const n, stepMS, slots, limit = 12, 40, 6, 2
	env := flowStack(t, slots, orchestrator.Config{Limits: map[string]orchestrator.Limit{orchestrator.LimitKey("capped", sleep.Capability): {MaxInFlight: limit}}})
	tl := watchCompletions(t, env)
	start := time.Now()
	for i := range n {
		submit(t, env.Bus, "capped", fmt.Sprintf("c%d", i), sleeper(stepMS, 0))
	}
	tl.await("capped", n, 30*time.Second)
	took := time.Since(start)
	// Two at a time: n/2 rounds of a step; with every slot, n/slots.
	if want := time.Duration(n/limit*stepMS) * time.Millisecond * 9 / 10; took < want {
		t.Errorf("%d steps limited to %d in flight took %s, want at least %s", n, limit, took.Round(time.Millisecond), want)
	}
	t.Logf("%d steps of %d ms, %d in flight at most: %s", n, stepMS, limit, took.Round(time.Millisecond))
}
