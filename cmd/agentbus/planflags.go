package main

import (
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/orchestrator"
)

// planFlags configure how the orchestrator plans bare queries.
type planFlags struct {
	llmURL, llmModel string
	llmTimeout       time.Duration
}

func (f *planFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.llmURL, "llm-url", "", "OpenAI-compatible API base URL (e.g. http://localhost:11434/v1) for the LLM planner; key from "+llm.APIKeyEnv)
	cmd.Flags().StringVar(&f.llmModel, "llm-model", "gpt-4o-mini", "model the LLM planner asks")
	cmd.Flags().DurationVar(&f.llmTimeout, "llm-timeout", 15*time.Second, "bound on one LLM planning call; past it the heuristic planner plans")
}

// config builds the orchestrator configuration these flags describe.
func (f *planFlags) config(b *bus.Bus, log *slog.Logger) (orchestrator.Config, error) {
	cfg := orchestrator.Config{Bus: b, Logger: log}
	if f.llmURL == "" {
		log.Info("planner: heuristic (no --llm-url)")
		return cfg, nil
	}
	chat, err := llm.NewChat(llm.ChatConfig{URL: f.llmURL, Model: f.llmModel, APIKey: os.Getenv(llm.APIKeyEnv), Timeout: f.llmTimeout})
	if err != nil {
		return cfg, &exitError{code: exitUsage, msg: err.Error()}
	}
	cfg.Planner = &orchestrator.LLMPlanner{Chat: chat}
	log.Info("planner: LLM with heuristic fallback", "llm", chat.Name())
	return cfg, nil
}
