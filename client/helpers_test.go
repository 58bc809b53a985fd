package client_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/orchestrator"
)

// deadline bounds every wait; nothing sleeps.
const deadline = 60 * time.Second

// stack is a test's embedded NATS server with an echo and sleep worker,
// an orchestrator, and a gateway that can be restarted on its port.
type stack struct {
	t    *testing.T
	env  *bustest.Env
	addr string
	gw   struct {
		cancel context.CancelFunc
		done   chan error
	}
}

func startStack(t *testing.T) *stack {
	t.Helper()
	env := bustest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	log := bustest.Logger(t)
	w, err := agents.NewWorker(agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{echo.Agent{}, sleep.Agent{}}, Logger: log,
		ShutdownGrace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(ctx, orchestrator.Config{Bus: env.Bus, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	go func() { defer wg.Done(); _ = o.Run(ctx) }()
	s := &stack{t: t, env: env, addr: "127.0.0.1:0"}
	s.startGateway()
	t.Cleanup(s.stopGateway)
	return s
}

func (s *stack) startGateway() {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	g, err := gateway.New(ctx, gateway.Config{Bus: s.env.Bus, Addr: s.addr, Logger: bustest.Logger(s.t)})
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	addr, err := g.Listen()
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	s.addr = addr.String()
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	s.gw.cancel, s.gw.done = cancel, done
}

func (s *stack) stopGateway() {
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

func (s *stack) client(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{URL: "http://" + s.addr})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	t.Cleanup(cancel)
	return ctx
}
