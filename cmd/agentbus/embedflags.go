package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/llm"
)

// embedFlags choose the embedder of a command that reads the agent
// registry but searches no index (orchestrator, gateway). It should be the
// workers' (--embed-url of worker and serve): their cards' stored vectors
// are then used as they are; cards embedded with another embedder are
// embedded again, once each.
type embedFlags struct {
	url, model string
}

func (f *embedFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.url, "embed-url", "", "OpenAI-compatible API base URL for embeddings, to match queries with agents (key from "+llm.APIKeyEnv+"); "+
		"use the workers' --embed-url; unset: the deterministic local embedder")
	fl.StringVar(&f.model, "embed-model", "text-embedding-3-small", "embeddings model (with --embed-url)")
}

// embedder is the embedder the flags name.
func (f *embedFlags) embedder() (llm.Embedder, error) {
	b := backendFlags{embedURL: f.url, embedModel: f.model}
	return b.embedder()
}

// openRegistry opens the agent registry that discovers agents with emb,
// and says which embedder that is.
func openRegistry(ctx context.Context, b *bus.Bus, emb llm.Embedder, log *slog.Logger) (*discovery.Registry, error) {
	reg, err := discovery.Open(ctx, discovery.Config{Bus: b, Embedder: emb, Logger: log})
	if err != nil {
		return nil, err
	}
	log.Info("agent discovery", "embedder", emb.Name())
	return reg, nil
}
