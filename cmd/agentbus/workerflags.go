package main

import (
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/bus"
)

// builtins are the agents this binary can run, by capability.
func builtins() map[string]agents.Agent {
	out := map[string]agents.Agent{}
	for _, a := range []agents.Agent{echo.Agent{}, sleep.Agent{}} {
		for _, c := range a.Card().Capabilities {
			out[c] = a
		}
	}
	return out
}

func builtinNames() []string {
	var names []string
	for c := range builtins() {
		names = append(names, c)
	}
	sort.Strings(names)
	return names
}

// workerFlags are the flags of every command that runs agents.
type workerFlags struct {
	capabilities                       []string
	concurrency, maxDeliver            int
	ackWait, stepTimeout, heartbeat    time.Duration
	retryBase, retryMax, shutdownGrace time.Duration
}

func (f *workerFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.capabilities, "capabilities", builtinNames(), "built-in capabilities to serve ("+strings.Join(builtinNames(), ", ")+")")
	fl.IntVar(&f.concurrency, "concurrency", 8, "steps of one capability run at once by this process")
	fl.IntVar(&f.maxDeliver, "max-deliver", 5, "deliveries of a step before it is dead-lettered")
	fl.DurationVar(&f.ackWait, "ack-wait", 30*time.Second, "a step held this long without an in-progress ack is redelivered")
	fl.DurationVar(&f.stepTimeout, "step-timeout", 5*time.Minute, "bound on one run of a step")
	fl.DurationVar(&f.heartbeat, "heartbeat", 5*time.Second, "registry heartbeat; a registration lives three heartbeats")
	fl.DurationVar(&f.retryBase, "retry-base", 250*time.Millisecond, "first retry delay of a failing step (doubles each time)")
	fl.DurationVar(&f.retryMax, "retry-max", 10*time.Second, "longest retry delay")
	fl.DurationVar(&f.shutdownGrace, "shutdown-grace", 10*time.Second, "on SIGTERM, time for in-flight steps to finish before they are handed back")
}

// worker builds the worker these flags describe.
func (f *workerFlags) worker(b *bus.Bus, log *slog.Logger) (*agents.Worker, error) {
	all := builtins()
	var list []agents.Agent
	for _, c := range f.capabilities {
		a, ok := all[c]
		if !ok {
			return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("--capabilities: unknown capability %q (built in: %s)", c, strings.Join(builtinNames(), ", "))}
		}
		if !slices.Contains(list, a) {
			list = append(list, a)
		}
	}
	w, err := agents.NewWorker(agents.WorkerConfig{
		Bus: b, Agents: list, Concurrency: f.concurrency, MaxDeliver: f.maxDeliver, AckWait: f.ackWait,
		StepTimeout: f.stepTimeout, Heartbeat: f.heartbeat, RetryBase: f.retryBase, RetryMax: f.retryMax,
		ShutdownGrace: f.shutdownGrace, Logger: log,
	})
	if err != nil {
		return nil, &exitError{code: exitUsage, msg: err.Error()}
	}
	return w, nil
}

// defaultWorkerFlags are the flags' defaults, for callers that build
// serveFlags by hand (tests).
func defaultWorkerFlags() workerFlags {
	var f workerFlags
	f.register(&cobra.Command{})
	return f
}
