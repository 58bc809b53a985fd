package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/retrieval"
)

type serveFlags struct {
	data, natsAddr, httpAddr, natsConfig, logLevel string
	eventsMaxAge                                   time.Duration
	streams                                        streamFlags
	// replicasSet says --replicas was given; otherwise a clustered server
	// (--routes, or a cluster block in --nats-config) gets 3.
	replicasSet bool
	cluster     clusterFlags
	worker      workerFlags
	plan        planFlags
	auth        authFlags
	ws          wsFlags
	search      backendFlags
	otel        otelFlags
	// sampleCorpus indexes the shipped corpus into an empty default index.
	sampleCorpus bool
	// logOut receives the log; nil is os.Stderr.
	logOut io.Writer
}

func newServe() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run everything in one process: embedded NATS, orchestrator, built-in agents, HTTP gateway",
		Args:  cobra.NoArgs,
		RunE: stoppable(func(cmd *cobra.Command, _ []string) error {
			f.logOut = cmd.ErrOrStderr()
			f.replicasSet = cmd.Flags().Changed("replicas")
			return serve(cmd.Context(), f, nil)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.data, "data", "./data", "directory of the JetStream file store")
	fl.StringVar(&f.natsAddr, "nats-addr", "127.0.0.1:4222", "NATS client listen address HOST:PORT (port -1: random)")
	fl.StringVar(&f.httpAddr, "http-addr", "127.0.0.1:8080", "HTTP listen address HOST:PORT (port 0: random)")
	fl.StringVar(&f.natsConfig, "nats-config", "", "optional nats-server configuration file, e.g. nats.conf")
	fl.DurationVar(&f.eventsMaxAge, "events-max-age", 7*24*time.Hour, "how long workflow events are kept for replay")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.streams.register(cmd)
	f.cluster.register(cmd)
	f.worker.register(cmd)
	f.plan.register(cmd)
	f.auth.register(cmd)
	f.ws.register(cmd)
	f.search.register(cmd)
	f.otel.register(cmd)
	fl.BoolVar(&f.sampleCorpus, "sample-corpus", true, "index the shipped sample corpus (Go standard library documentation) into tenant default's search index when it is empty")
	return cmd
}

// newLogger logs text lines at level and above to w (os.Stderr if nil).
func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("--log-level %q: want debug, info, warn or error", level)}
	}
	if w == nil {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// readyInfo says where a started serve listens; tests receive it.
type readyInfo struct {
	NATSURL, HTTPURL, DataDir string
}

// agentDeps opens what the built-in agents need: the LLM, the embedder and
// the search backend (indexing the sample corpus into an empty default
// index first, if asked to).
func (f serveFlags) agentDeps(ctx context.Context, b *bus.Bus, log *slog.Logger) (agentDeps, error) {
	chat, err := f.plan.chat()
	if err != nil {
		return agentDeps{}, err
	}
	emb, err := f.search.embedder()
	if err != nil {
		return agentDeps{}, err
	}
	open := func() (retrieval.Backend, error) {
		be, err := f.search.open(searchDir(f.data))
		if err != nil {
			return nil, err
		}
		if f.sampleCorpus {
			if err := indexSampleCorpus(ctx, be, gateway.DefaultTenant, f.data, log, os.Stderr); err != nil {
				_ = be.Close()
				return nil, err
			}
		}
		log.Info("search backend", "backend", be.Name(), "profiles", be.Profiles())
		return be, nil
	}
	return agentDeps{b: b, log: log, chat: chat, backend: open, embedder: emb}, nil
}

// serve runs everything until ctx ends; ready, if not nil, is called once
// every part is listening.
func serve(ctx context.Context, f serveFlags, ready func(readyInfo)) error {
	start := time.Now()
	log, err := newLogger(f.logOut, f.logLevel)
	if err != nil {
		return err
	}
	if err := f.streams.check(); err != nil {
		return err
	}
	cluster, jsSync, err := f.cluster.server()
	if err != nil {
		return err
	}
	if f.streams.replicas > 1 && !cluster.On() && f.natsConfig == "" {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("--replicas %d needs a cluster: give the embedded server --cluster-addr and --routes (or a cluster block in --nats-config)", f.streams.replicas)}
	}
	release, err := lockData(f.data, "serve")
	if err != nil {
		return err
	}
	defer release()
	if err := probeHTTP(f.httpAddr); err != nil {
		return err
	}
	srv, err := bus.StartServer(bus.ServerConfig{DataDir: f.data, Addr: f.natsAddr, ConfigFile: f.natsConfig, Logger: log,
		Name: f.cluster.serverName, Cluster: cluster, Sync: jsSync})
	if err != nil {
		return serverStartFailed(err)
	}
	srv.LogTo(log)
	if !f.replicasSet && f.streams.replicas <= 1 && srv.Clustered() {
		f.streams.replicas = 3 // a cluster's default
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	b, err := bus.Connect(ctx, bus.Config{Server: srv, Name: "agentbus-serve", Logger: log})
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.Provision(ctx, f.streams.config(f.eventsMaxAge)); err != nil {
		return provisionFailed(err)
	}
	if f.worker.capabilities == nil {
		f.worker = defaultWorkerFlags()
	}
	if f.search.backend == "" {
		f.search.backend = "embedded"
	}
	tp, stopTracing, err := f.otel.start(ctx, "agentbus", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	f.worker.tracer, f.plan.tracer = tp, tp
	// The orchestrator's and workers' metrics, served at the gateway's
	// /metrics beside its own.
	metrics, err := newAppMetrics(true, true, false)
	if err != nil {
		return err
	}
	f.plan.metrics = metrics
	d, err := f.agentDeps(ctx, b, log)
	if err != nil {
		return err
	}
	d.metrics = metrics
	w, closeAgents, err := f.worker.worker(ctx, d)
	if err != nil {
		return err
	}
	defer closeAgents()
	if err := w.Start(ctx); err != nil {
		return err
	}
	ocfg, err := f.plan.config(b, log)
	if err != nil {
		return err
	}
	// One registry, with the workers' embedder, discovers for the
	// orchestrator and the gateway.
	reg, err := openRegistry(ctx, b, d.embedder, log)
	if err != nil {
		return err
	}
	defer reg.Close()
	ocfg.Registry = reg
	o, err := orchestrator.New(ctx, ocfg)
	if err != nil {
		return err
	}
	g, err := gateway.New(ctx, gateway.Config{Bus: b, Addr: f.httpAddr, Logger: log, Auth: f.auth.config(), WS: f.ws.config(), CORS: f.ws.cors(), Documents: f.ws.documents(),
		Metrics: metrics.gatherer(), TracerProvider: tp, Registry: reg})
	if err != nil {
		return &exitError{code: exitUsage, msg: err.Error()}
	}
	addr, err := g.Listen()
	if err != nil {
		return httpListenFailed(f.httpAddr, err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, run := range []func(context.Context) error{w.Run, o.Run, g.Run} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = run(runCtx); errs[i] != nil {
				cancel() // one part failing stops the whole
			}
		}()
	}
	log.Info("agentbus ready", "nats", srv.ClientURL(), "http", "http://"+addr.String(), "data", srv.DataDir(),
		"agents", w.Capabilities(), "server", srv.Name(), "cluster", srv.ClusterName(), "replicas", max(f.streams.replicas, 1),
		"startup", time.Since(start).Round(time.Millisecond))
	if ready != nil {
		ready(readyInfo{NATSURL: srv.ClientURL(), HTTPURL: "http://" + addr.String(), DataDir: srv.DataDir()})
	}
	wg.Wait()
	log.Info("agentbus stopped")
	return errors.Join(errs...)
}
