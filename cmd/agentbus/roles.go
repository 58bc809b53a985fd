package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/orchestrator"
)

// connectFlags are the flags of the roles that join an external NATS and
// provision the streams (orchestrator, gateway).
type connectFlags struct {
	natsFlags
	streams      streamFlags
	eventsMaxAge time.Duration
}

func (f *connectFlags) register(cmd *cobra.Command) {
	f.natsFlags.register(cmd)
	cmd.Flags().DurationVar(&f.eventsMaxAge, "events-max-age", 7*24*time.Hour, "retention of workflow events (when this process provisions the streams)")
	f.streams.register(cmd)
}

// connect dials NATS and provisions the streams and buckets (idempotent;
// an incompatible existing one is reported, never changed).
func (f *connectFlags) connect(ctx context.Context, name string, log *slog.Logger) (*bus.Bus, error) {
	if err := f.streams.check(); err != nil {
		return nil, err
	}
	b, err := f.dial(ctx, name, log)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := b.Provision(pctx, f.streams.config(f.eventsMaxAge)); err != nil {
		b.Close()
		return nil, provisionFailed(err)
	}
	return b, nil
}

func newOrchestrator() *cobra.Command {
	var f connectFlags
	var pf planFlags
	var mf metricsFlags
	var of otelFlags
	var ef embedFlags
	cmd := &cobra.Command{
		Use:   "orchestrator",
		Short: "Run an orchestrator against a NATS server; run several for availability",
		Args:  cobra.NoArgs,
		RunE: stoppable(func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log, err := f.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			b, err := f.connect(ctx, "agentbus-orchestrator", log)
			if err != nil {
				return err
			}
			defer b.Close()
			if mf.on() {
				if pf.metrics, err = newAppMetrics(true, false, true); err != nil {
					return err
				}
			}
			tp, stopTracing, err := of.start(ctx, "agentbus-orchestrator", log)
			if err != nil {
				return err
			}
			defer stopTracing()
			pf.tracer = tp
			cfg, err := pf.config(b, log)
			if err != nil {
				return err
			}
			emb, err := ef.embedder()
			if err != nil {
				return err
			}
			if cfg.Registry, err = openRegistry(ctx, b, emb, log); err != nil {
				return err
			}
			defer cfg.Registry.Close()
			o, err := orchestrator.New(ctx, cfg)
			if err != nil {
				return err
			}
			ready := []any{"nats", f.nats}
			if mf.on() {
				bound, err := serveMetrics(ctx, mf.addr, pf.metrics, log)
				if err != nil {
					return err
				}
				ready = append(ready, "metrics", metricsURL(bound))
			}
			log.Info("agentbus orchestrator ready", ready...)
			return o.Run(ctx)
		}),
	}
	f.register(cmd)
	pf.register(cmd)
	pf.registerTokens(cmd)
	mf.register(cmd)
	of.register(cmd)
	ef.register(cmd)
	return cmd
}

func newGateway() *cobra.Command {
	var f connectFlags
	var addr string
	var auth authFlags
	var quotas quotaFlags
	var perms permFlags
	var ws wsFlags
	var of otelFlags
	var ef embedFlags
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run the HTTP gateway against a NATS server; run several behind a load balancer",
		Args:  cobra.NoArgs,
		RunE: stoppable(func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log, err := f.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			b, err := f.connect(ctx, "agentbus-gateway", log)
			if err != nil {
				return err
			}
			defer b.Close()
			tp, stopTracing, err := of.start(ctx, "agentbus-gateway", log)
			if err != nil {
				return err
			}
			defer stopTracing()
			emb, err := ef.embedder()
			if err != nil {
				return err
			}
			reg, err := openRegistry(ctx, b, emb, log)
			if err != nil {
				return err
			}
			defer reg.Close()
			g, err := gateway.New(ctx, gateway.Config{Bus: b, Addr: addr, Logger: log, Auth: auth.config(), WS: ws.config(), CORS: ws.cors(), Documents: ws.documents(),
				Quotas: quotas.config(), TracerProvider: tp, Registry: reg, Permissions: perms.table()})
			if err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			bound, err := g.Listen()
			if err != nil {
				return httpListenFailed(addr, err)
			}
			log.Info("agentbus gateway ready", "nats", f.nats, "http", "http://"+bound.String())
			return g.Run(ctx)
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&addr, "http-addr", "127.0.0.1:8080", "HTTP listen address HOST:PORT")
	auth.register(cmd)
	quotas.register(cmd)
	perms.register(cmd)
	ws.register(cmd)
	of.register(cmd)
	ef.register(cmd)
	return cmd
}
