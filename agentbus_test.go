package agentbus_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentbus/agentbus"
	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/internal/datadir"
)

// A Go program runs the whole bus in its own process: a workflow
// submitted over HTTP and one over NATS both complete on the program's
// agent, and ending the context stops everything cleanly.
func TestRunEmbedsTheWholeBus(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ready := make(chan agentbus.Info, 1)
	done := make(chan error, 1)
	dir := t.TempDir()
	go func() {
		done <- agentbus.Run(ctx, agentbus.Config{DataDir: dir, Agents: []agents.Agent{echo.Agent{}},
			Logger: bustest.Logger(t), Ready: func(i agentbus.Info) { ready <- i }})
	}()
	var info agentbus.Info
	select {
	case info = <-ready:
	case err := <-done:
		t.Fatalf("Run ended before it was ready: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("not ready within 60s")
	}
	// one process per data directory
	if err := agentbus.Run(t.Context(), agentbus.Config{DataDir: dir}); !errors.Is(err, datadir.ErrInUse) {
		t.Fatalf("a second Run on the same data directory: %v", err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	plan := &events.Plan{Steps: []events.PlanStep{{ID: "a", Capability: "echo", Input: json.RawMessage(`{"x":1}`)}}}
	overHTTP, err := client.New(client.Config{URL: info.HTTPURL})
	if err != nil {
		t.Fatal(err)
	}
	overNATS, err := client.NewNATS(info.Bus, client.NATSConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*client.Client{"http": overHTTP, "nats": overNATS} {
		if _, err := c.Submit(wctx, client.Submission{WorkflowID: "via-" + name, Plan: plan}); err != nil {
			t.Fatal(err)
		}
		res, err := c.Wait(wctx, "via-"+name)
		var out echo.Output
		if err != nil || json.Unmarshal(res.Result, &out) != nil || out.StepID != "a" {
			t.Fatalf("%s: result %s, %v", name, res.Result, err)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v on a clean stop", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop within 30s")
	}
	if err := agentbus.Run(t.Context(), agentbus.Config{}); !errors.Is(err, agentbus.ErrConfig) {
		t.Fatalf("no data directory: %v", err)
	}
}
