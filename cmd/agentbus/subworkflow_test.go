package main

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/agentbus/agentbus/agents/subworkflow"
	"github.com/agentbus/agentbus/bus/bustest"
)

// TestSubWorkflowIsBuiltIn: capability "workflow" is among the built-in
// capabilities that serve and worker run by default, and needs nothing
// but the bus.
func TestSubWorkflowIsBuiltIn(t *testing.T) {
	if !slices.Contains(builtinNames(), subworkflow.Capability) {
		t.Fatalf("built in: %v, want %s among them", builtinNames(), subworkflow.Capability)
	}
	env := bustest.New(t)
	list, closeAll, err := builtinAgents(context.Background(), []string{subworkflow.Capability}, agentDeps{b: env.Bus, log: slog.New(slog.DiscardHandler)})
	if closeAll != nil {
		defer closeAll()
	}
	if err != nil || len(list) != 1 || !slices.Equal(list[0].Card().Capabilities, []string{subworkflow.Capability}) {
		t.Fatalf("serving %s: %v, %v", subworkflow.Capability, list, err)
	}
}
