// Package agentbus runs a whole agentbus in a Go program's own process,
// as nats-server can be embedded: an embedded NATS server with
// JetStream, the streams and buckets, an orchestrator, a worker serving
// the agents the program gives, and the HTTP gateway. Run is what
// `agentbus serve` does, for a program that composes its own agents
// (the CLI's serve also builds the built-in agents from its flags).
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
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/internal/datadir"
	"github.com/agentbus/agentbus/orchestrator"
)

// ErrConfig: the Config is not usable.
var ErrConfig = errors.New("agentbus: invalid config")

// Config says what to run. DataDir is required; the zero value of every
// other field means its default.
type Config struct {
	// DataDir holds the JetStream store; one process at a time (a lock
	// file, as for agentbus serve, refuses a second).
	DataDir string
	// NATSAddr is the embedded server's client address; default
	// "127.0.0.1:-1" (a random port — Info.NATSURL says which).
	NATSAddr string
	// HTTPAddr is the gateway's; default "127.0.0.1:0" (random).
	// NoGateway runs none.
	HTTPAddr  string
	NoGateway bool
	// Agents are served by this process's worker; none: no worker (the
	// program's agents may run elsewhere, on the same NATS).
	Agents []agents.Agent
	// Streams sizes the streams and buckets (retention, replicas, …).
	Streams bus.StreamsConfig
	// Worker, Orchestrator and Gateway adjust those roles; their Bus,
	// Agents, Registry and Addr are set here.
	Worker       agents.WorkerConfig
	Orchestrator orchestrator.Config
	Gateway      gateway.Config
	// Logger logs every part; default slog.Default().
	Logger *slog.Logger
	// Ready, if set, is called once everything listens.
	Ready func(Info)
}

// Info says where a running agentbus listens, and hands over its bus
// connection (for client.NewNATS, or agents of the program's own).
type Info struct {
	NATSURL string
	HTTPURL string
	Bus     *bus.Bus
}

func (c *Config) setDefaults() {
	c.NATSAddr = cmp.Or(c.NATSAddr, "127.0.0.1:-1")
	c.HTTPAddr = cmp.Or(c.HTTPAddr, "127.0.0.1:0")
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("%w: DataDir is required", ErrConfig)
	}
	return nil
}

// Run starts everything and runs it until ctx ends (or one part fails,
// which stops the rest), then stops it all and returns the parts' errors.
func Run(ctx context.Context, cfg Config) error {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := cfg.Logger
	lock, err := datadir.Acquire(cfg.DataDir, "agentbus.Run")
	if err != nil {
		return fmt.Errorf("agentbus: %w", err) // errors.Is datadir.ErrInUse: another process has it
	}
	defer lock.Release()
	srv, err := bus.StartServer(bus.ServerConfig{DataDir: cfg.DataDir, Addr: cfg.NATSAddr, Logger: log})
	if err != nil {
		return fmt.Errorf("agentbus: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	b, err := bus.Connect(ctx, bus.Config{Server: srv, Name: "agentbus-embedded", Logger: log})
	if err != nil {
		return fmt.Errorf("agentbus: %w", err)
	}
	defer b.Close()
	if err := b.Provision(ctx, cfg.Streams); err != nil {
		return fmt.Errorf("agentbus: %w", err)
	}
	var runs []func(context.Context) error
	if len(cfg.Agents) > 0 {
		wc := cfg.Worker
		wc.Bus, wc.Agents, wc.Logger = b, cfg.Agents, cmp.Or(wc.Logger, log)
		w, err := agents.NewWorker(wc)
		if err != nil {
			return err
		}
		if err := w.Start(ctx); err != nil {
			return err
		}
		runs = append(runs, w.Run)
	}
	reg, err := discovery.Open(ctx, discovery.Config{Bus: b, Embedder: cfg.Worker.Embedder})
	if err != nil {
		return fmt.Errorf("agentbus: %w", err)
	}
	defer reg.Close()
	oc := cfg.Orchestrator
	oc.Bus, oc.Registry, oc.Logger = b, reg, cmp.Or(oc.Logger, log)
	o, err := orchestrator.New(ctx, oc)
	if err != nil {
		return err
	}
	runs = append(runs, o.Run)
	info := Info{NATSURL: srv.ClientURL(), Bus: b}
	if !cfg.NoGateway {
		gc := cfg.Gateway
		gc.Bus, gc.Registry, gc.Addr, gc.Logger = b, reg, cfg.HTTPAddr, cmp.Or(gc.Logger, log)
		g, err := gateway.New(ctx, gc)
		if err != nil {
			return err
		}
		addr, err := g.Listen()
		if err != nil {
			return fmt.Errorf("agentbus: gateway listen on %s: %w", cfg.HTTPAddr, err)
		}
		info.HTTPURL = "http://" + addr.String()
		runs = append(runs, g.Run)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(runs))
	for i, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = run(runCtx); errs[i] != nil {
				cancel() // one part failing stops the whole
			}
		}()
	}
	log.Info("agentbus ready", "nats", info.NATSURL, "http", info.HTTPURL, "data", srv.DataDir())
	if cfg.Ready != nil {
		cfg.Ready(info)
	}
	wg.Wait()
	return errors.Join(errs...)
}
