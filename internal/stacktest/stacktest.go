package stacktest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/orchestrator"
)

// Options adjust Start.
type Options struct {
	// Agents are served beside echo.
	Agents []agents.Agent
	// Gateway starts a gateway too.
	Gateway bool
	// GatewayConfig, if set, adjusts the gateway's config at every start
	// (tokens, say).
	GatewayConfig func(*gateway.Config)
	// WorkerConfig and OrchestratorConfig, if set, adjust the worker's
	// config (a payload threshold, say) and the orchestrator's (tool
	// permissions, say) before they start.
	WorkerConfig       func(*agents.WorkerConfig)
	OrchestratorConfig func(*orchestrator.Config)
}

// Stack is one test's running agentbus. Env is its server; Addr the
// gateway's host:port (fixed across RestartGateway), when there is one.
type Stack struct {
	Env   *bustest.Env
	Addr  string
	t     testing.TB
	tweak func(*gateway.Config)
	gw    struct {
		cancel context.CancelFunc
		done   chan error
	}
}

// Start starts a server, a worker serving echo and opts.Agents, an
// orchestrator and, with opts.Gateway, a gateway; all stop when t ends.
func Start(t testing.TB, opts Options) *Stack {
	t.Helper()
	return StartOn(t, bustest.New(t), opts)
}

// StartOn is Start on a given server.
func StartOn(t testing.TB, env *bustest.Env, opts Options) *Stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	log := bustest.Logger(t)
	wcfg := agents.WorkerConfig{Bus: env.Bus, Agents: append([]agents.Agent{echo.Agent{}}, opts.Agents...),
		Logger: log, ShutdownGrace: time.Millisecond}
	if opts.WorkerConfig != nil {
		opts.WorkerConfig(&wcfg)
	}
	w, err := agents.NewWorker(wcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ocfg := orchestrator.Config{Bus: env.Bus, Logger: log}
	if opts.OrchestratorConfig != nil {
		opts.OrchestratorConfig(&ocfg)
	}
	o, err := orchestrator.New(ctx, ocfg)
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
	s := &Stack{Env: env, Addr: "127.0.0.1:0", t: t, tweak: opts.GatewayConfig}
	if opts.Gateway {
		s.StartGateway()
		t.Cleanup(s.StopGateway)
	}
	return s
}

// URL is the gateway's base URL.
func (s *Stack) URL() string { return "http://" + s.Addr }

// StartGateway serves a gateway on s.Addr; the first start picks the
// port and later ones reuse it.
func (s *Stack) StartGateway() {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := gateway.Config{Bus: s.Env.Bus, Addr: s.Addr, Logger: bustest.Logger(s.t)}
	if s.tweak != nil {
		s.tweak(&cfg)
	}
	g, err := gateway.New(ctx, cfg)
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	addr, err := g.Listen()
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	s.Addr = addr.String()
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	s.gw.cancel, s.gw.done = cancel, done
}

// RestartGateway stops the gateway and starts a new one on its port.
func (s *Stack) RestartGateway() {
	s.t.Helper()
	s.StopGateway()
	s.StartGateway()
}

// StopGateway shuts the gateway down and waits until its port is free;
// safe to call twice.
func (s *Stack) StopGateway() {
	s.t.Helper()
	if s.gw.cancel == nil {
		return
	}
	s.gw.cancel()
	if err := <-s.gw.done; err != nil {
		s.t.Errorf("gateway run: %v", err)
	}
	s.gw.cancel = nil
}
