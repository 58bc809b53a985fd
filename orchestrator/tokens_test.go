package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/orchestrator"
)

// TestTokenLimit: a tenant limited to 100 tokens a second on a model
// (a bucket of 100) runs steps that spend 50 each at about two a second
// once their capability is known to spend on it — each step once, none
// failed, the waiting ones told until when — while another tenant's steps
// of the same capability are not held back.
func TestTokenLimit(t *testing.T) {
	const n, spend, perMinute, burst, slots = 10, 50, 6000.0, 100.0, 2
	think := newFn("think", func(ctx context.Context, req agents.Request) (json.RawMessage, error) {
		llm.MeterModel(ctx, "m1", spend-10, 10)
		return json.RawMessage(`"thought"`), nil
	})
	env := bustest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	log := bustest.Logger(t)
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{think}, Logger: log, Concurrency: slots})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(ctx, orchestrator.Config{Bus: env.Bus, Logger: log,
		TokenLimits: map[string]orchestrator.TokenLimit{orchestrator.TokenLimitKey("frugal", "m1"): {PerMinute: perMinute, Burst: burst}}})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = o.Run(ctx) }()

	tl := watchCompletions(t, env)
	nc, err := nats.Connect(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	notes := make(chan string, 4*n)
	if _, err := nc.Subscribe("agentbus.frugal.events.*", func(m *nats.Msg) {
		var p events.Progress
		if m.Header.Get(events.HeaderType) == string(events.TypeProgress) && json.Unmarshal(m.Data, &p) == nil && p.ThrottledUntil != nil {
			notes <- p.Message
		}
	}); err != nil {
		t.Fatal(err)
	}
	one := events.WorkflowSubmitted{Plan: plan(step("s", "think"))}
	// The first reply teaches the orchestrator that think spends on m1.
	submit(t, env.Bus, "frugal", "first", one)
	tl.await("frugal", 1, 10*time.Second)
	start := time.Now()
	for i := range n {
		submit(t, env.Bus, "frugal", fmt.Sprintf("f%d", i), one)
	}
	for i := range n {
		submit(t, env.Bus, "other", fmt.Sprintf("o%d", i), one)
	}
	tl.await("other", n, 10*time.Second)
	otherTook := time.Since(start)
	tl.await("frugal", n+1, 30*time.Second)
	took := time.Since(start)
	// The bucket held burst-spend after the first step; a step is admitted
	// while it holds a token, so the slots' steps in flight may overdraw it
	// by slots×spend: the rest is paid for at the limit's rate.
	rate := perMinute / 60
	if want := time.Duration((float64(n*spend) - (burst - spend) - slots*spend) / rate * float64(time.Second) * 0.9); took < want {
		t.Errorf("%d steps of %d tokens at %g tokens/s took %s, want at least %s", n, spend, rate, took.Round(time.Millisecond), want)
	}
	if otherTook > took/2 {
		t.Errorf("the unlimited tenant's %d steps took %s, the limited one's %s: held back by another's limit", n, otherTook, took)
	}
	if got := think.calls.Load(); got != 2*n+1 {
		t.Errorf("think ran %d times, want %d (each step once)", got, 2*n+1)
	}
	if len(notes) == 0 {
		t.Fatal("no progress event said a step waited for the token limit")
	}
	if note := <-notes; !strings.Contains(note, "token limit on m1") {
		t.Errorf("throttled note %q does not name the token limit", note)
	}
	t.Logf("%d steps of %d tokens at %g tokens/s took %s (the unlimited tenant's %s); %d throttled notes",
		n, spend, rate, took.Round(time.Millisecond), otherTook.Round(time.Millisecond), len(notes)+1)
}
