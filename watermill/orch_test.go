package watermill_test

import (
	"context"
	"log/slog"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/orchestrator"
)

func newOrchestrator(ctx context.Context, env *bustest.Env, log *slog.Logger) (*orchestrator.Orchestrator, error) {
	return orchestrator.New(ctx, orchestrator.Config{Bus: env.Bus, Logger: log})
}
