package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/events"
)

// TestFailureStopsTheOtherSteps: when a required step fails while another
// step of the workflow runs, the running one is stopped (its work would be
// thrown away), and a resume runs both again.
func TestFailureStopsTheOtherSteps(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	stopped := make(chan struct{}, 4)
	var slowRuns atomic.Int64
	fails := newFn("fails", func(ctx context.Context, req agents.Request) (json.RawMessage, error) {
		if failing.Load() {
			time.Sleep(50 * time.Millisecond) // the slow step is running by then
			return nil, errors.Join(agents.ErrPermanent, errors.New("backend down"))
		}
		return json.RawMessage(`"ok"`), nil
	})
	slow := newFn("slow", func(ctx context.Context, req agents.Request) (json.RawMessage, error) {
		if slowRuns.Add(1) > 1 {
			return json.RawMessage(`"slow done"`), nil
		}
		select {
		case <-ctx.Done():
			stopped <- struct{}{}
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return json.RawMessage(`"never"`), nil
		}
	})
	s := startStack(t, fails, slow)
	submit(t, s.env.Bus, "default", "stop-others", events.WorkflowSubmitted{Plan: plan(step("a", "fails"), step("b", "slow"))})
	if end := last(t, collect(t, s.env.Bus, "default", "stop-others")); end.Type != events.TypeError {
		t.Fatalf("ended %s", end.Type)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow step kept running after its workflow failed")
	}
	failing.Store(false)
	if res := control(t, s.env.Bus, "default", "stop-others", events.Control{Action: events.ActionResume}); !res.Applied {
		t.Fatalf("resume: %+v", res)
	}
	waitFor(t, "the resumed workflow completes", func() bool {
		cp, err := s.orch.Checkpoint(context.Background(), "default", "stop-others")
		return err == nil && cp.Status == events.StateCompleted
	})
}
