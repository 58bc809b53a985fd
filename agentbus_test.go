package agentbus_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus"
	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/internal/datadir"
	"github.com/agentbus/agentbus/orchestrator"
)

// A Go program runs the whole bus in its own process: a workflow
// submitted over HTTP and one over NATS both complete on the program's
// agent, and ending the context stops everything cleanly.
func TestRunEmbedsTheWholeBus(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ready := make(chan agentbus.Info, 1)
	done := make(chan error, 1)
	dir := t.TempDir()
	go func() {
		done <- agentbus.Run(ctx, agentbus.Config{DataDir: dir, Agents: []agents.Agent{echo.Agent{}},
			Logger: bustest.Logger(t), Ready: func(i agentbus.Info) { ready <- i }})
	}()
	var info agentbus.Info
	select {
	case info = <-ready:
	case err := <-done:
		t.Fatalf("Run ended before it was ready: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("not ready within 60s")
	}
	// one process per data directory
	if err := agentbus.Run(t.Context(), agentbus.Config{DataDir: dir}); !errors.Is(err, datadir.ErrInUse) {
		t.Fatalf("a second Run on the same data directory: %v", err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	plan := &events.Plan{Steps: []events.PlanStep{{ID: "a", Capability: "echo", Input: json.RawMessage(`{"x":1}`)}}}
	overHTTP, err := client.New(client.Config{URL: info.HTTPURL})
	if err != nil {
		t.Fatal(err)
	}
	overNATS, err := client.NewNATS(info.Bus, client.NATSConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*client.Client{"http": overHTTP, "nats": overNATS} {
		if _, err := c.Submit(wctx, client.Submission{WorkflowID: "via-" + name, Plan: plan}); err != nil {
			t.Fatal(err)
		}
		res, err := c.Wait(wctx, "via-"+name)
		var out echo.Output
		if err != nil || json.Unmarshal(res.Result, &out) != nil || out.StepID != "a" {
			t.Fatalf("%s: result %s, %v", name, res.Result, err)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v on a clean stop", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop within 30s")
	}
	if err := agentbus.Run(t.Context(), agentbus.Config{}); !errors.Is(err, agentbus.ErrConfig) {
		t.Fatalf("no data directory: %v", err)
	}
}

// runUntilReady runs Run with cfg in the background and returns what
// Ready gave; stop ends it and returns Run's error.
func runUntilReady(t *testing.T, cfg agentbus.Config) (info agentbus.Info, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan agentbus.Info, 1)
	done := make(chan error, 1)
	cfg.Ready = func(i agentbus.Info) { ready <- i }
	go func() { done <- agentbus.Run(ctx, cfg) }()
	stop = func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not stop within 30s")
			return nil
		}
	}
	select {
	case info = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("Run ended before it was ready: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("not ready within 60s")
	}
	return info, stop
}

// A worker built from the connected bus (as agentbus serve builds its
// built-in agents) and an orchestrator config built from it serve a
// workflow; Info says what runs; the worker's done is called once, after
// Run stopped it.
func TestRunBuildsPartsFromTheBus(t *testing.T) {
	var dones atomic.Int32
	var fromBus *bus.Bus
	info, stop := runUntilReady(t, agentbus.Config{DataDir: t.TempDir(), NoGateway: true, Logger: bustest.Logger(t),
		WorkerFrom: func(_ context.Context, b *bus.Bus) (*agents.Worker, func(), error) {
			fromBus = b
			w, err := agents.NewWorker(agents.WorkerConfig{Bus: b, Agents: []agents.Agent{echo.Agent{}}})
			return w, func() { dones.Add(1) }, err
		},
		OrchestratorFrom: func(_ context.Context, b *bus.Bus) (orchestrator.Config, error) {
			return orchestrator.Config{StepLease: time.Minute}, nil
		},
	})
	if info.Bus != fromBus || info.HTTPURL != "" || !slices.Contains(info.Capabilities, "echo") ||
		info.Replicas != 1 || info.ServerName != "agentbus" || info.ClusterName != "" || !filepath.IsAbs(info.DataDir) {
		t.Fatalf("info %+v", info)
	}
	c, err := client.NewNATS(info.Bus, client.NATSConfig{})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	plan := &events.Plan{Steps: []events.PlanStep{{ID: "a", Capability: "echo", Input: json.RawMessage(`{"x":1}`)}}}
	if _, err := c.Submit(wctx, client.Submission{WorkflowID: "from-bus", Plan: plan}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Wait(wctx, "from-bus"); err != nil || res.Result == nil {
		t.Fatalf("result %s, %v", res.Result, err)
	}
	if n := dones.Load(); n != 0 {
		t.Fatalf("done called %d times while running", n)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run returned %v on a clean stop", err)
	}
	if n := dones.Load(); n != 1 {
		t.Fatalf("done called %d times after the stop, want 1", n)
	}
}

// A part that does not start ends Run with an error saying which part
// (and keeping the part's own), and leaves nothing behind: what the
// worker opened is closed, the bus connection too, the NATS port and the
// data directory are free again.
func TestRunStopsEverythingWhenAPartFails(t *testing.T) {
	errHook := errors.New("hook failed")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		name   string
		adjust func(*agentbus.Config)
		want   error
		as     any
	}{
		{"worker hook", func(c *agentbus.Config) {
			c.WorkerFrom = func(context.Context, *bus.Bus) (*agents.Worker, func(), error) { return nil, nil, errHook }
		}, errHook, nil},
		{"orchestrator hook", func(c *agentbus.Config) {
			c.OrchestratorFrom = func(context.Context, *bus.Bus) (orchestrator.Config, error) { return orchestrator.Config{}, errHook }
		}, errHook, nil},
		{"gateway config", func(c *agentbus.Config) { c.Gateway.MaxBodyBytes = 10 }, agentbus.ErrGatewayConfig, nil},
		{"http port taken", func(c *agentbus.Config) { c.HTTPAddr = taken.Addr().String() }, agentbus.ErrListen, new(*net.OpError)},
		{"nats port taken", func(c *agentbus.Config) { c.NATSAddr = taken.Addr().String() }, agentbus.ErrServerStart, new(*broker.ListenError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, natsAddr := t.TempDir(), freeAddr(t)
			var dones atomic.Int32
			var fromBus *bus.Bus
			cfg := agentbus.Config{DataDir: dir, NATSAddr: natsAddr, Logger: bustest.Logger(t),
				WorkerFrom: func(_ context.Context, b *bus.Bus) (*agents.Worker, func(), error) {
					fromBus = b
					w, err := agents.NewWorker(agents.WorkerConfig{Bus: b, Agents: []agents.Agent{echo.Agent{}}})
					return w, func() { dones.Add(1) }, err
				}}
			tc.adjust(&cfg)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			err := agentbus.Run(ctx, cfg)
			if !errors.Is(err, tc.want) || (tc.as != nil && !errors.As(err, tc.as)) {
				t.Fatalf("Run: %v; want %v", err, tc.want)
			}
			if fromBus != nil && (dones.Load() != 1 || !fromBus.Conn().IsClosed()) {
				t.Errorf("after the failure: worker's done called %d times, bus closed %v", dones.Load(), fromBus.Conn().IsClosed())
			}
			if cfg.NATSAddr == natsAddr {
				l, err := net.Listen("tcp", natsAddr)
				if err != nil {
					t.Fatalf("NATS port still taken: %v", err)
				}
				l.Close()
			}
			lock, err := datadir.Acquire(dir, "test")
			if err != nil {
				t.Fatalf("data directory still locked: %v", err)
			}
			lock.Release()
		})
	}
}

// freeAddr is a 127.0.0.1 address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Validate reports every problem at once, each naming its field; Run
// refuses such a config before it locks or starts anything.
func TestValidateNamesEveryProblem(t *testing.T) {
	worker := func(context.Context, *bus.Bus) (*agents.Worker, func(), error) { return nil, nil, nil }
	for _, tc := range []struct {
		name string
		cfg  agentbus.Config
		want []string
	}{
		{"no data directory", agentbus.Config{}, []string{"DataDir is required"}},
		{"two workers", agentbus.Config{DataDir: "d", Agents: []agents.Agent{echo.Agent{}}, WorkerFrom: worker}, []string{"Agents and WorkerFrom"}},
		{"server address", agentbus.Config{DataDir: "d", Server: broker.Config{Addr: "127.0.0.1:4222"}}, []string{"Server.Addr", "NATSAddr"}},
		{"all at once", agentbus.Config{Agents: []agents.Agent{echo.Agent{}}, WorkerFrom: worker, Server: broker.Config{DataDir: "x"}},
			[]string{"DataDir is required", "Agents and WorkerFrom", "Server.DataDir"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if !errors.Is(err, agentbus.ErrConfig) {
				t.Fatalf("Validate: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %v; want it to name %q", err, w)
				}
			}
			dir := filepath.Join(t.TempDir(), "data")
			if tc.cfg.DataDir != "" {
				tc.cfg.DataDir = dir
			}
			if err := agentbus.Run(t.Context(), tc.cfg); !errors.Is(err, agentbus.ErrConfig) {
				t.Fatalf("Run: %v", err)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("Run created %s for a bad config", dir)
			}
		})
	}
}
