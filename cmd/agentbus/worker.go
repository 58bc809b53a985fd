package main

import (
	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/retrieval"
)

func newWorker() *cobra.Command {
	var wf workerFlags
	var nf connectFlags
	var indexDir string
	var plan planFlags
	var sf backendFlags
	var mf metricsFlags
	var of otelFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run built-in agents against a NATS server; start more to scale out",
		Args:  cobra.NoArgs,
		RunE: stoppable(func(cmd *cobra.Command, _ []string) error {
			log, err := nf.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			b, err := nf.connect(ctx, "agentbus-worker", log)
			if err != nil {
				return err
			}
			defer b.Close()
			var metrics *appMetrics
			if mf.on() {
				if metrics, err = newAppMetrics(false, true, true); err != nil {
					return err
				}
				plan.metrics = metrics
			}
			tp, stopTracing, err := of.start(ctx, "agentbus-worker", log)
			if err != nil {
				return err
			}
			defer stopTracing()
			wf.tracer = tp
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
			w, closeAgents, err := wf.worker(ctx, agentDeps{b: b, log: log, chat: chat, backend: open, embedder: emb, lenient: lenient, metrics: metrics, perms: plan.perms.table()})
			if err != nil {
				return err
			}
			defer closeAgents()
			if err := w.Start(ctx); err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			ready := []any{"nats", nf.nats, "worker", w.Name(), "capabilities", w.Capabilities()}
			if mf.on() {
				bound, err := serveMetrics(ctx, mf.addr, metrics, log)
				if err != nil {
					return err
				}
				ready = append(ready, "metrics", metricsURL(bound))
			}
			log.Info("agentbus worker ready", ready...)
			return w.Run(ctx)
		}),
	}
	nf.register(cmd)
	mf.register(cmd)
	of.register(cmd)
	cmd.Flags().StringVar(&indexDir, "index-dir", "./data/index", "directory of the embedded search index (search agent, --search-backend embedded); one process may open it at a time")
	wf.register(cmd)
	plan.register(cmd)
	sf.register(cmd)
	return cmd
}
