package orchestrator_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/workflow"
)

// TestPublishedOutboxIsCleared: a running workflow whose next transition
// does not come soon (a step of 400 ms) has its published outbox cleared
// from the stored checkpoint within about Config.ClearDelay, so no other
// process finds it there and publishes it again; the workflow completes
// with its step run once.
func TestPublishedOutboxIsCleared(t *testing.T) {
	env := flowStack(t, 2, orchestrator.Config{ClearDelay: 20 * time.Millisecond})
	tl := watchCompletions(t, env)
	submit(t, env.Bus, "acme", "slow", sleeper(400, 0))
	kv, err := env.Bus.KV(context.Background(), "AGENTBUS_CHECKPOINTS")
	if err != nil {
		t.Fatal(err)
	}
	var seen time.Time // when the step was first seen working
	var cleared time.Duration
	deadline := time.Now().Add(5 * time.Second)
	for cleared == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the running workflow's checkpoint kept its published outbox (or never ran) for 5s")
		}
		e, err := kv.Get(context.Background(), "acme.slow")
		var cp struct {
			Status events.State      `json:"status"`
			Outbox []json.RawMessage `json:"outbox"`
		}
		if err == nil && workflow.UnmarshalCheckpoint(e.Value, &cp) == nil {
			if cp.Status.Terminal() {
				t.Fatal("the workflow ended before its outbox was seen cleared: the outbox stayed for the whole 400 ms step")
			}
			if cp.Status == events.StateWorking {
				if seen.IsZero() {
					seen = time.Now()
				}
				if len(cp.Outbox) == 0 {
					cleared = max(time.Since(seen), time.Nanosecond)
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	if cleared > 300*time.Millisecond {
		t.Errorf("the outbox stayed %s after the step was seen working, want about the clear delay (20ms)", cleared)
	}
	tl.await("acme", 1, 10*time.Second)
}
