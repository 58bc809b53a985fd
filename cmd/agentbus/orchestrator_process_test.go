package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

var orchestratorLine = regexp.MustCompile(`msg="agentbus orchestrator ready"`)

// TestKilledOrchestratorWorkflowsComplete kills the orchestrator process
// (kill -9) at a random moment of a 6-step workflow, ten times: every
// workflow completes, no step runs twice, and a client following the event
// stream across the crash sees every orchestrator event exactly once, in
// order.
func TestKilledOrchestratorWorkflowsComplete(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	env := bustest.New(t)
	startOrch := func() *proc {
		p := startProc(t, "orchestrator", "--nats", env.URL)
		p.waitLine(t, orchestratorLine)
		return p
	}
	worker := startProc(t, "worker", "--nats", env.URL, "--capabilities", "sleep", "--heartbeat", "200ms")
	worker.waitLine(t, workerLine)
	orch := startOrch()
	const rounds = 10
	nap := func(id string, deps ...string) events.PlanStep {
		return events.PlanStep{ID: id, Capability: "sleep", Input: json.RawMessage(`{"ms":40}`), DependsOn: deps}
	}
	six := &events.Plan{Steps: []events.PlanStep{
		nap("s1"), nap("s2", "s1"), nap("s3", "s1"), nap("s4", "s2", "s3"), nap("s5", "s4"), nap("s6", "s5"),
	}}
	for round := range rounds {
		wf := fmt.Sprintf("crash-%02d", round)
		followed := make(chan []bus.Record, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var rs []bus.Record
			_ = env.Bus.Follow(ctx, "default", wf, 0, func(_ context.Context, r bus.Record) error {
				rs = append(rs, r)
				if r.Envelope.Type.Terminal() {
					return bus.ErrStop
				}
				return nil
			})
			followed <- rs
		}()
		submitRaw(t, env.Bus, wf, six)
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond) // a random point of the workflow
		if err := orch.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-orch.done
		orch = startOrch()
		rs := <-followed
		if len(rs) == 0 || rs[len(rs)-1].Envelope.Type != events.TypeComplete {
			t.Fatalf("round %d: workflow did not complete: %d events", round, len(rs))
		}
		// The orchestrator's events carry ce-id <tenant>/<wf>/event/<n>:
		// continuous means n = 0, 1, 2, … with no gap or repeat.
		n := 0
		var prev uint64
		for _, r := range rs {
			if r.Offset <= prev {
				t.Fatalf("round %d: offsets not increasing", round)
			}
			prev = r.Offset
			if strings.Contains(r.Envelope.ID, "/event/") {
				if want := events.EventKey("default", wf, n); r.Envelope.ID != want {
					t.Fatalf("round %d: event %q where %q was due", round, r.Envelope.ID, want)
				}
				n++
			}
		}
	}
	// Every step ran once: the worker's processed count is 6 per workflow.
	reg, err := discovery.New(t.Context(), env.Bus, nil)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "worker reports 60 processed steps", func() bool {
		list, err := reg.List(t.Context())
		if err != nil || len(list) != 1 {
			return false
		}
		if list[0].Processed > 6*rounds {
			t.Fatalf("%d steps ran for %d workflows of 6 steps: some ran twice", list[0].Processed, rounds)
		}
		return list[0].Processed == 6*rounds
	})
}

// submitRaw publishes a workflow submission straight to NATS.
func submitRaw(t *testing.T, b *bus.Bus, workflow string, p *events.Plan) {
	t.Helper()
	subj, _ := subjects.Submit("default")
	key := events.SubmitKey("default", workflow)
	env, err := events.New(events.TypeWorkflowSubmitted, key, "/test", "default", workflow, "", events.WorkflowSubmitted{Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(t.Context(), subj, env, key); err != nil {
		t.Fatal(err)
	}
}
