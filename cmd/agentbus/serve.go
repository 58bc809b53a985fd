package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus"
	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/retrieval"
)

type serveFlags struct {
	data, natsAddr, httpAddr, natsConfig, logLevel string
	eventsMaxAge                                   time.Duration
	// readyTimeout bounds the embedded server's start (broker.Config).
	readyTimeout time.Duration
	streams      streamFlags
	// replicasSet says --replicas was given; otherwise a clustered server
	// (--routes, or a cluster block in --nats-config) gets 3.
	replicasSet bool
	cluster     clusterFlags
	worker      workerFlags
	plan        planFlags
	auth        authFlags
	quotas      quotaFlags
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
	fl.DurationVar(&f.readyTimeout, "ready-timeout", broker.DefaultReadyTimeout, "how long the embedded nats-server may take to accept connections before serve gives up: "+
		"after a crash it recovers its store first, which a large or compressed one takes a while to do (logged every 5s)")
	fl.DurationVar(&f.eventsMaxAge, "events-max-age", 7*24*time.Hour, "how long workflow events are kept for replay")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.streams.register(cmd)
	f.cluster.register(cmd)
	f.worker.register(cmd)
	f.plan.register(cmd)
	f.plan.tokens = &f.auth.tokens
	f.auth.register(cmd)
	f.quotas.register(cmd)
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
// index first, if asked to). The bus is set once it is connected.
func (f serveFlags) agentDeps(ctx context.Context, log *slog.Logger) (agentDeps, error) {
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
	return agentDeps{log: log, chat: chat, backend: open, embedder: emb, perms: f.plan.perms.table()}, nil
}

// serve runs everything until ctx ends; ready, if not nil, is called once
// every part is listening. The parts are agentbus.Run's; serve adds the
// flags' checks, the data lock, the HTTP port probe and the exit codes.
func serve(ctx context.Context, f serveFlags, ready func(readyInfo)) error {
	log, err := newLogger(f.logOut, f.logLevel)
	if err != nil {
		return err
	}
	server, err := f.server()
	if err != nil {
		return err
	}
	release, err := lockData(f.data, "serve")
	if err != nil {
		return err
	}
	defer release()
	if err := probeHTTP(f.httpAddr); err != nil {
		return err
	}
	cfg, stopTracing, err := f.config(ctx, server, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	cfg.Ready = func(i agentbus.Info) {
		if ready != nil {
			ready(readyInfo{NATSURL: i.NATSURL, HTTPURL: i.HTTPURL, DataDir: i.DataDir})
		}
	}
	return runFailed(agentbus.Run(ctx, cfg), f.httpAddr)
}

// server checks the stream and cluster flags and returns the embedded
// server's settings.
func (f serveFlags) server() (broker.Config, error) {
	if err := f.streams.check(); err != nil {
		return broker.Config{}, err
	}
	cluster, jsSync, err := f.cluster.server()
	if err != nil {
		return broker.Config{}, err
	}
	if f.streams.replicas > 1 && !cluster.On() && f.natsConfig == "" {
		return broker.Config{}, &exitError{code: exitUsage, msg: fmt.Sprintf("--replicas %d needs a cluster: give the embedded server --cluster-addr and --routes (or a cluster block in --nats-config)", f.streams.replicas)}
	}
	if f.readyTimeout < 0 {
		return broker.Config{}, &exitError{code: exitUsage, msg: fmt.Sprintf("--ready-timeout %s: want a positive duration (0: the default, %s)", f.readyTimeout, broker.DefaultReadyTimeout)}
	}
	return broker.Config{ConfigFile: f.natsConfig, Name: f.cluster.serverName, Cluster: cluster, Sync: jsSync, ReadyTimeout: f.readyTimeout}, nil
}

// config is what serve runs: the embedded server as given, the built-in
// agents (built once the bus is connected: they need it), the
// orchestrator and the gateway, with tracing (stopTracing flushes its
// spans).
func (f serveFlags) config(ctx context.Context, server broker.Config, log *slog.Logger) (cfg agentbus.Config, stopTracing func(), err error) {
	if f.worker.capabilities == nil {
		f.worker = defaultWorkerFlags()
	}
	if f.search.backend == "" {
		f.search.backend = "embedded"
	}
	// The orchestrator's and workers' metrics, served at the gateway's
	// /metrics beside its own.
	metrics, err := newAppMetrics(true, true, false)
	if err != nil {
		return cfg, nil, err
	}
	f.plan.metrics = metrics
	d, err := f.agentDeps(ctx, log)
	if err != nil {
		return cfg, nil, err
	}
	d.metrics = metrics
	tp, stopTracing, err := f.otel.start(ctx, "agentbus", log)
	if err != nil {
		return cfg, nil, err
	}
	f.worker.tracer, f.plan.tracer = tp, tp
	streams := f.streams.config(f.eventsMaxAge)
	switch {
	case f.replicasSet:
		streams.Replicas = max(streams.Replicas, 1) // as given, on a cluster too
	case streams.Replicas <= 1:
		streams.Replicas = 0 // Run's default: 3 on a cluster, else 1
	}
	return agentbus.Config{
		DataDir: f.data, DataDirLocked: true, NATSAddr: f.natsAddr, Server: server, HTTPAddr: f.httpAddr, Name: "agentbus-serve",
		Streams: streams, Logger: log,
		WorkerFrom: func(ctx context.Context, b *bus.Bus) (*agents.Worker, func(), error) {
			d.b = b
			return f.worker.worker(ctx, d)
		},
		OrchestratorFrom: func(_ context.Context, b *bus.Bus) (orchestrator.Config, error) { return f.plan.config(b, log) },
		// One registry, with the workers' embedder, discovers for the
		// orchestrator and the gateway.
		Registry: discovery.Config{Embedder: d.embedder},
		Gateway: gateway.Config{Auth: f.auth.config(), WS: f.ws.config(), CORS: f.ws.cors(), Documents: f.ws.documents(),
			Quotas: f.quotas.config(), Metrics: metrics.gatherer(), TracerProvider: tp, Permissions: f.plan.perms.table()},
	}, stopTracing, nil
}

// runFailed turns agentbus.Run's error into the process's answer: the
// message and exit status of the part that did not start.
func runFailed(err error, httpAddr string) error {
	var se *agentbus.StartError
	if !errors.As(err, &se) {
		return err
	}
	switch se.Stage {
	case agentbus.ErrServerStart:
		return serverStartFailed(se.Err)
	case agentbus.ErrProvision:
		return provisionFailed(se.Err)
	case agentbus.ErrListen:
		return httpListenFailed(httpAddr, se.Err)
	case agentbus.ErrGatewayConfig:
		return &exitError{code: exitUsage, msg: se.Err.Error()}
	}
	return err
}
