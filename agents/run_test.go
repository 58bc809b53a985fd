package agents_test

import (
	"context"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/bus/bustest"
)

// TestRunStoppedRightAfterStartReturnsNil: a worker told to stop (SIGTERM)
// just after it started is shutting down cleanly, so Run returns nil and
// unregisters, as it does when stopped later.
func TestRunStoppedRightAfterStartReturnsNil(t *testing.T) {
	env := bustest.New(t)
	reg := openRegistry(t, env.Bus)
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{echo.Agent{}, sleep.Agent{}}, Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(instances(t, reg)); n != 2 {
		t.Fatalf("%d instances registered after Start, want 2", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the stop arrives before Run has set up its consumers
	if err := w.Run(ctx); err != nil {
		t.Errorf("Run on an ended context = %v, want nil: a clean stop is not a failure "+
			"(bus/consume.go Consume returns ensureConsumer's context error instead of nil when ctx has ended, "+
			"and agents/worker.go Run joins it into its result)", err)
	}
	if list := instances(t, reg); len(list) != 0 {
		t.Errorf("after Run returned the registry still lists %+v", list)
	}
}
