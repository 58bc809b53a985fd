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
	cmd.Flags().StringVar(&f.llmURL, "llm-url", "", "OpenAI-compatible API base URL (e.g. http://localhost:11434/v1) for the LLM planner and agents; key from "+llm.APIKeyEnv+"; unset: heuristics only")
	cmd.Flags().StringVar(&f.llmModel, "llm-model", "gpt-4o-mini", "model the LLM planner and agents ask")
	cmd.Flags().DurationVar(&f.llmTimeout, "llm-timeout", 15*time.Second, "bound on one LLM call; past it the planner or agent falls back to its heuristic, and says so")
}

// chat is the LLM these flags name, nil without --llm-url.
func (f *planFlags) chat() (*llm.Chat, error) {
	if f.llmURL == "" {
		return nil, nil
	}
	chat, err := llm.NewChat(llm.ChatConfig{URL: f.llmURL, Model: f.llmModel, APIKey: os.Getenv(llm.APIKeyEnv), Timeout: f.llmTimeout})
	if err != nil {
		return nil, &exitError{code: exitUsage, msg: "--llm-url: " + err.Error()}
	}
	return chat, nil
}

// config builds the orchestrator configuration these flags describe.
func (f *planFlags) config(b *bus.Bus, log *slog.Logger) (orchestrator.Config, error) {
	cfg := orchestrator.Config{Bus: b, Logger: log}
	if f.llmURL == "" {
		log.Info("planner: heuristic (no --llm-url)")
		return cfg, nil
	}
	chat, err := f.chat()
	if err != nil {
		return cfg, err
	}
	cfg.Planner = &orchestrator.LLMPlanner{Chat: chat}
	log.Info("planner: LLM with heuristic fallback", "llm", chat.Name())
	return cfg, nil
}
