package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/retrieval"
)

func newWorker() *cobra.Command {
	var wf workerFlags
	var natsURL, logLevel, indexDir string
	var plan planFlags
	var sf backendFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run built-in agents against a NATS server; start more to scale out",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			b, err := bus.Connect(cctx, bus.Config{URL: natsURL, Name: "agentbus-worker", Logger: log})
			cancel()
			if err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			defer b.Close()
			chat, err := plan.chat()
			if err != nil {
				return err
			}
			emb, err := sf.embedder()
			if err != nil {
				return err
			}
			open := func() (retrieval.Backend, error) { return sf.open(indexDir) }
			lenient := !cmd.Flags().Changed("capabilities")
			w, closeAgents, err := wf.worker(ctx, agentDeps{b: b, log: log, chat: chat, backend: open, embedder: emb, lenient: lenient})
			if err != nil {
				return err
			}
			defer closeAgents()
			if err := w.Start(ctx); err != nil {
				return &exitError{code: exitUsage, msg: err.Error() + " (is the server provisioned? start `agentbus serve` or `agentbus orchestrator` once)"}
			}
			log.Info("agentbus worker ready", "nats", natsURL, "worker", w.Name(), "capabilities", w.Capabilities())
			return w.Run(ctx)
		},
	}
	cmd.Flags().StringVar(&natsURL, "nats", "nats://127.0.0.1:4222", "NATS server URL(s), comma-separated")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	cmd.Flags().StringVar(&indexDir, "index-dir", "./data/index", "directory of the embedded search index (search agent, --search-backend embedded); one process may open it at a time")
	wf.register(cmd)
	plan.register(cmd)
	sf.register(cmd)
	return cmd
}
