// Package agentbus runs a whole agentbus in a Go program's own process,
// as nats-server can be embedded: an embedded NATS server with
// JetStream, the streams and buckets, an orchestrator, a worker serving
// the agents the program gives, and the HTTP gateway.
//
// Run is the one composition of those parts: `agentbus serve` is Run
// with the settings its flags give (a nats-server config file, a
// cluster, tracing, metrics) and its built-in agents, which it builds in
// Config.WorkerFrom because they need the connected bus. A Config comes
// in; Info goes to Config.Ready once everything listens; Run returns
// when its context ends, and an error of a part that did not start is a
// *StartError saying which (ErrServerStart, ErrProvision, …).
package agentbus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/internal/datadir"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/orchestrator"
)

// ErrConfig: the Config is not usable.
var ErrConfig = errors.New("agentbus: invalid config")

// The parts of Run that may fail to start, as StartError.Stage: a caller
// tells them apart with errors.Is (the CLI gives each its own message).
var (
	// ErrServerStart: the embedded NATS server did not start (a taken
	// port is a *broker.ListenError).
	ErrServerStart = errors.New("agentbus: start the NATS server")
	// ErrProvision: the streams and buckets could not be provisioned (a
	// replica difference is bus.ErrReplicas).
	ErrProvision = errors.New("agentbus: provision the streams")
	// ErrGatewayConfig: the gateway refused its config.
	ErrGatewayConfig = errors.New("agentbus: gateway config")
	// ErrListen: the gateway could not listen on HTTPAddr (a *net.OpError).
	ErrListen = errors.New("agentbus: gateway listen")
)

// StartError is Run's error when a part does not start: Stage is
// ErrServerStart, ErrProvision, ErrGatewayConfig or ErrListen, Err the
// part's own error. errors.Is and errors.As reach both.
type StartError struct {
	Stage error
	Err   error
}

func (e *StartError) Error() string { return e.Stage.Error() + ": " + e.Err.Error() }

// Unwrap returns the stage and the part's error.
func (e *StartError) Unwrap() []error { return []error{e.Stage, e.Err} }

// Config says what to run. DataDir is required; the zero value of every
// other field means its default.
type Config struct {
	// DataDir holds the JetStream store; one process at a time (a lock
	// file, as for agentbus serve, refuses a second).
	DataDir string
	// DataDirLocked says the caller already holds DataDir's lock (as
	// agentbus serve does, from before it probes its ports): Run does not
	// take it again, which in the same process would be refused.
	DataDirLocked bool
	// NATSAddr is the embedded server's client address; default
	// "127.0.0.1:-1" (a random port — Info.NATSURL says which).
	NATSAddr string
	// Server adjusts the embedded server: a nats-server config file, its
	// name, a cluster to join, how often JetStream syncs. Its DataDir and
	// Addr are DataDir and NATSAddr; its Logger defaults to Logger.
	Server broker.Config
	// Name is this process's connection name on NATS; default
	// "agentbus-embedded".
	Name string
	// HTTPAddr is the gateway's; default "127.0.0.1:0" (random).
	// NoGateway runs none.
	HTTPAddr  string
	NoGateway bool
	// Agents are served by this process's worker; none (and no
	// WorkerFrom): no worker (the program's agents may run elsewhere, on
	// the same NATS).
	Agents []agents.Agent
	// WorkerFrom, if set, builds the worker once the bus is connected and
	// the streams provisioned, for agents that need the bus; Run starts
	// and runs it, and calls done (if not nil) once it has stopped. A nil
	// worker runs none. Not with Agents.
	WorkerFrom func(ctx context.Context, b *bus.Bus) (w *agents.Worker, done func(), err error)
	// Streams sizes the streams and buckets (retention, replicas, …).
	// Replicas 0 is 1 on a server alone, 3 on a clustered one.
	Streams bus.StreamsConfig
	// Worker, Orchestrator, Registry and Gateway adjust those roles; their
	// Bus, Agents, Registry and Addr are set here. The registry (one, for
	// the orchestrator and the gateway) embeds with Registry.Embedder,
	// default Worker.Embedder: the workers' own, so that stored vectors
	// are used as they are.
	Worker       agents.WorkerConfig
	Orchestrator orchestrator.Config
	Registry     discovery.Config
	Gateway      gateway.Config
	// OrchestratorFrom, if set, gives the orchestrator's config once the
	// bus is connected (a session store on the bus, say), in place of
	// Orchestrator.
	OrchestratorFrom func(ctx context.Context, b *bus.Bus) (orchestrator.Config, error)
	// Logger logs every part; default slog.Default().
	Logger *slog.Logger
	// Ready, if set, is called once everything listens.
	Ready func(Info)
}

// Info says where a running agentbus listens and what it runs, and
// hands over its bus connection (for client.NewNATS, or agents of the
// program's own).
type Info struct {
	NATSURL string
	// HTTPURL is "" with NoGateway.
	HTTPURL string
	// DataDir is the absolute data directory.
	DataDir string
	// ServerName is the embedded server's name; ClusterName its
	// cluster's, "" when it runs alone.
	ServerName, ClusterName string
	// Capabilities are those of this process's worker, nil without one.
	Capabilities []string
	// Replicas is the streams' and buckets' replication factor.
	Replicas int
	Bus      *bus.Bus
}

func (c *Config) setDefaults() {
	c.NATSAddr = cmp.Or(c.NATSAddr, "127.0.0.1:-1")
	c.HTTPAddr = cmp.Or(c.HTTPAddr, "127.0.0.1:0")
	c.Name = cmp.Or(c.Name, "agentbus-embedded")
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, fmt.Errorf("%w: DataDir is required", ErrConfig))
	}
	if c.Server.DataDir != "" || c.Server.Addr != "" {
		errs = append(errs, fmt.Errorf("%w: Server.DataDir and Server.Addr are Run's: set DataDir and NATSAddr", ErrConfig))
	}
	if len(c.Agents) > 0 && c.WorkerFrom != nil {
		errs = append(errs, fmt.Errorf("%w: Agents and WorkerFrom both build the worker: set one", ErrConfig))
	}
	return errors.Join(errs...)
}

// Run starts everything and runs it until ctx ends (or one part fails,
// which stops the rest), then stops it all and returns the parts' errors.
// A part that does not start is a *StartError; the errors of WorkerFrom
// and OrchestratorFrom are returned as they are.
func Run(ctx context.Context, cfg Config) error {
	start := time.Now()
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := cfg.Logger
	if !cfg.DataDirLocked {
		lock, err := datadir.Acquire(cfg.DataDir, "agentbus.Run")
		if err != nil {
			return fmt.Errorf("agentbus: %w", err) // errors.Is datadir.ErrInUse: another process has it
		}
		defer lock.Release()
	}
	sc := cfg.Server
	sc.DataDir, sc.Addr, sc.Logger = cfg.DataDir, cfg.NATSAddr, cmp.Or(sc.Logger, log)
	srv, err := broker.Start(sc)
	if err != nil {
		return &StartError{Stage: ErrServerStart, Err: err}
	}
	srv.LogTo(sc.Logger)
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	b, err := bus.Connect(ctx, bus.Config{URL: srv.ClientURL(), InProcess: srv, Name: cfg.Name, Logger: log})
	if err != nil {
		return err
	}
	defer b.Close()
	if cfg.Streams.Replicas == 0 && srv.Clustered() {
		cfg.Streams.Replicas = 3 // a cluster's default
	}
	if err := b.Provision(ctx, cfg.Streams); err != nil {
		return &StartError{Stage: ErrProvision, Err: err}
	}
	p := &parts{}
	defer p.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // what the parts started with ctx (watches, heartbeats) ends before they close
	if err := p.compose(ctx, cfg, b); err != nil {
		return err
	}
	info := Info{NATSURL: srv.ClientURL(), HTTPURL: p.httpURL, DataDir: srv.DataDir(), ServerName: srv.Name(),
		ClusterName: srv.ClusterName(), Capabilities: p.capabilities, Replicas: max(cfg.Streams.Replicas, 1), Bus: b}
	return p.run(ctx, func() {
		log.Info("agentbus ready", "nats", info.NATSURL, "http", info.HTTPURL, "data", info.DataDir,
			"agents", info.Capabilities, "server", info.ServerName, "cluster", info.ClusterName, "replicas", info.Replicas,
			"startup", time.Since(start).Round(time.Millisecond))
		if cfg.Ready != nil {
			cfg.Ready(info)
		}
	}, log)
}

// parts are the roles Run composes on the connected bus: what each runs,
// and what to close once they all stopped.
type parts struct {
	runs         []func(context.Context) error
	closers      []func()
	capabilities []string
	httpURL      string
}

// compose builds and starts the worker, then the registry, the
// orchestrator and the gateway, in that order.
func (p *parts) compose(ctx context.Context, cfg Config, b *bus.Bus) error {
	log := cfg.Logger
	w, err := p.worker(ctx, cfg, b)
	if err != nil {
		return err
	}
	if w != nil {
		if err := w.Start(ctx); err != nil {
			return err
		}
		p.runs, p.capabilities = append(p.runs, w.Run), w.Capabilities()
	}
	oc := cfg.Orchestrator
	if cfg.OrchestratorFrom != nil {
		if oc, err = cfg.OrchestratorFrom(ctx, b); err != nil {
			return err
		}
	}
	rc := cfg.Registry
	rc.Bus, rc.Logger = b, cmp.Or(rc.Logger, log)
	if rc.Embedder == nil {
		rc.Embedder = cfg.Worker.Embedder
	}
	if rc.Embedder == nil {
		rc.Embedder = llm.LocalEmbedder{}
	}
	reg, err := discovery.Open(ctx, rc)
	if err != nil {
		return err
	}
	p.closers = append(p.closers, reg.Close)
	log.Info("agent discovery", "embedder", rc.Embedder.Name())
	oc.Bus, oc.Registry, oc.Logger = b, reg, cmp.Or(oc.Logger, log)
	o, err := orchestrator.New(ctx, oc)
	if err != nil {
		return err
	}
	p.runs = append(p.runs, o.Run)
	if cfg.NoGateway {
		return nil
	}
	gc := cfg.Gateway
	gc.Bus, gc.Registry, gc.Addr, gc.Logger = b, reg, cfg.HTTPAddr, cmp.Or(gc.Logger, log)
	g, err := gateway.New(ctx, gc)
	if err != nil {
		return &StartError{Stage: ErrGatewayConfig, Err: err}
	}
	addr, err := g.Listen()
	if err != nil {
		return &StartError{Stage: ErrListen, Err: err}
	}
	p.httpURL = "http://" + addr.String()
	p.runs = append(p.runs, g.Run)
	return nil
}

// worker builds this process's worker from Agents or WorkerFrom; nil:
// none.
func (p *parts) worker(ctx context.Context, cfg Config, b *bus.Bus) (*agents.Worker, error) {
	if cfg.WorkerFrom != nil {
		w, done, err := cfg.WorkerFrom(ctx, b)
		if done != nil {
			p.closers = append(p.closers, done)
		}
		return w, err
	}
	if len(cfg.Agents) == 0 {
		return nil, nil
	}
	wc := cfg.Worker
	wc.Bus, wc.Agents, wc.Logger = b, cfg.Agents, cmp.Or(wc.Logger, cfg.Logger)
	return agents.NewWorker(wc)
}

// run runs every part until ctx ends or one fails (which stops the
// rest), calling ready once they are all running, and returns their
// errors.
func (p *parts) run(ctx context.Context, ready func(), log *slog.Logger) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(p.runs))
	for i, run := range p.runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = run(runCtx); errs[i] != nil {
				cancel() // one part failing stops the whole
			}
		}()
	}
	ready()
	wg.Wait()
	log.Info("agentbus stopped")
	return errors.Join(errs...)
}

// close closes what the parts opened, the latest first, once they all
// stopped.
func (p *parts) close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
}
