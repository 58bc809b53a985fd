package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/internal/stacktest"
	"github.com/agentbus/agentbus/subjects"
)

// TestSSESurvivesStalledConsumers pauses every consumer following a
// workflow (as a consumer on a server that stopped delivering would be)
// twice while an SSE client follows it live: the followers notice, follow
// again from their cursors, and the client gets every event once, in
// order, to the terminal one. Followers have consumers on an events
// stream provisioned before live follow, as this one is made to be;
// bus's tests lose live events a follower without one must read back.
func TestSSESurvivesStalledConsumers(t *testing.T) {
	env := bustest.New(t)
	ctx0, cancel0 := context.WithTimeout(context.Background(), deadline)
	defer cancel0()
	str, err := env.Bus.JetStream().Stream(ctx0, subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	cfg := str.CachedInfo().Config
	cfg.RePublish = nil
	if _, err := env.Bus.JetStream().UpdateStream(ctx0, cfg); err != nil {
		t.Fatal(err)
	}
	stacktest.StartOn(t, env, stacktest.Options{Agents: []agents.Agent{sleep.Agent{}}})
	s := startGateway(t, env)
	var steps []map[string]any
	for i := range 10 {
		st := map[string]any{"id": fmt.Sprintf("s%d", i), "capability": "sleep", "input": map[string]int{"ms": 400}}
		if i > 0 {
			st["depends_on"] = []string{fmt.Sprintf("s%d", i-1)}
		}
		steps = append(steps, st)
	}
	sub := s.mustSubmit(t, map[string]any{"plan": map[string]any{"steps": steps}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := s.env.Bus.JetStream()
	paused, n := 0, 0
	st, err := s.readSSE(ctx, sub.EventsURL, func(sseFrame, []string) error {
		if n++; n != 8 && n != 20 {
			return nil
		}
		str, err := js.Stream(ctx, subjects.StreamEvents)
		if err != nil {
			return err
		}
		list := str.ListConsumers(ctx)
		for ci := range list.Info() {
			if strings.HasSuffix(ci.Config.FilterSubject, "."+sub.WorkflowID) {
				if _, err := js.PauseConsumer(ctx, subjects.StreamEvents, ci.Name, time.Now().Add(time.Hour)); err != nil {
					return err
				}
				paused++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v after %d frames", err, n)
	}
	_, frames, err := checkStream(st.Frames)
	if err != nil {
		t.Fatal(err)
	}
	if paused < 2 {
		t.Fatalf("paused %d consumers, want one at each of two points", paused)
	}
	for i := 1; i < len(frames); i++ {
		if frames[i].Offset != frames[i-1].Offset+1 {
			t.Fatalf("offsets not contiguous at %d: %d after %d", i, frames[i].Offset, frames[i-1].Offset)
		}
	}
	// The workflow is the stream's only one: its events are offsets 1 to
	// the terminal one, and the client must have all of them.
	if frames[0].Offset != 1 || frames[len(frames)-1].Type != "complete" {
		t.Fatalf("the client got offsets %d to %d ending %s, want 1 to the complete event", frames[0].Offset, frames[len(frames)-1].Offset, frames[len(frames)-1].Type)
	}
}
