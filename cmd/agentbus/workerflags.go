package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/agents/compose"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/agents/enhance"
	"github.com/agentbus/agentbus/agents/entities"
	"github.com/agentbus/agentbus/agents/ingest"
	"github.com/agentbus/agentbus/agents/memory"
	"github.com/agentbus/agentbus/agents/profiles"
	"github.com/agentbus/agentbus/agents/routing"
	"github.com/agentbus/agentbus/agents/search"
	"github.com/agentbus/agentbus/agents/selectweb"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/agents/subworkflow"
	"github.com/agentbus/agentbus/agents/toolagent"
	"github.com/agentbus/agentbus/agents/websearch"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/permissions"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/subjects"
)

// builtinNames are the capabilities of the agents this binary can run.
func builtinNames() []string {
	names := []string{echo.Capability, sleep.Capability, entities.Capability, enhance.Capability, profiles.Capability,
		routing.Capability, search.Capability, compose.CapabilitySummarize, compose.CapabilityDetailedReport, memory.Capability,
		ingest.Capability, websearch.Capability, selectweb.Capability, toolagent.Capability, subworkflow.Capability}
	sort.Strings(names)
	return names
}

// agentDeps are what the built-in agents need beyond the bus. Each is
// opened only when a capability that needs it is served.
type agentDeps struct {
	b   *bus.Bus
	log *slog.Logger
	// chat, when set, is the LLM the agents try before their heuristics.
	chat *llm.Chat
	// backend opens the search backend (the search agent).
	backend func() (retrieval.Backend, error)
	// embedder embeds for memory and routing.
	embedder llm.Embedder
	// lenient skips the search agent, with a warning, when its backend
	// cannot be opened (a worker started with the default capabilities
	// beside a serve that holds the embedded index), instead of failing.
	lenient bool
	// metrics, when set, records the worker runtime and search metrics.
	metrics *appMetrics
	// web configures web_search and select (webflags.go); nil: defaults,
	// no provider.
	web *webFlags
	// perms is the tool permissions table: the tool-calling agent offers
	// a model only the tools it allows.
	perms permissions.Table
}

// builtinAgents builds the agents serving caps, one per agent (summarize
// and detailed_report share one); close releases what they opened.
func builtinAgents(ctx context.Context, caps []string, d agentDeps) (list []agents.Agent, close func(), err error) {
	var closers []func()
	close = func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}
	defer func() {
		if err != nil {
			close()
		}
	}()
	var llmC agentkit.Completer
	if d.chat != nil {
		llmC = d.chat
	}
	// search and ingest share one backend: the embedded one is locked by
	// the process that opens it.
	var backend retrieval.Backend
	openBackend := func() (retrieval.Backend, error) {
		if backend != nil {
			return backend, nil
		}
		b, err := d.backend()
		if err != nil {
			return nil, err
		}
		backend = b
		closers = append(closers, func() { _ = b.Close() })
		return b, nil
	}
	seen := map[string]bool{}
	// The default capabilities include the web graph's, served only with
	// a provider; a list given by hand asks for what it names.
	explicit := !slices.Equal(caps, builtinNames())
	for _, c := range caps {
		if c == compose.CapabilityDetailedReport {
			c = compose.CapabilitySummarize
		}
		if seen[c] {
			continue
		}
		seen[c] = true
		var a agents.Agent
		switch c {
		case echo.Capability:
			a = echo.Agent{}
		case sleep.Capability:
			a = sleep.Agent{}
		case entities.Capability:
			a, err = entities.New(entities.Config{LLM: llmC})
		case enhance.Capability:
			a, err = enhance.New(enhance.Config{LLM: llmC})
		case profiles.Capability:
			a, err = profiles.New(profiles.Config{LLM: llmC})
		case routing.Capability:
			a, err = routing.New(routing.Config{LLM: llmC, Embedder: d.embedder})
		case compose.CapabilitySummarize:
			a, err = compose.New(compose.Config{LLM: llmC})
		case search.Capability, ingest.Capability:
			var b retrieval.Backend
			if b, err = openBackend(); err != nil {
				if d.lenient {
					d.log.Warn("not serving "+c+": its index cannot be opened here (pass --capabilities to choose, or --index-dir / --search-backend vespa)", "err", err)
					err = nil
					continue
				}
				return nil, close, err
			}
			if c == search.Capability {
				a, err = searchAgent(b, d.chat)
				break
			}
			a, err = ingestAgent(ctx, d, b, &closers)
		case websearch.Capability, selectweb.Capability:
			var ok bool
			if a, ok, err = webAgent(c, d, explicit); err == nil && !ok {
				continue
			}
		case toolagent.Capability:
			if d.chat == nil {
				if explicit {
					return nil, close, &exitError{code: exitUsage, msg: "--capabilities: agent (the tool-calling agent) needs a model: pass --llm-url"}
				}
				d.log.Info("not serving agent, the tool-calling agent: it needs a model (--llm-url)")
				continue
			}
			var reg *discovery.Registry
			if reg, err = discovery.New(ctx, d.b, nil); err != nil {
				return nil, close, fmt.Errorf("agent: %w", err)
			}
			closers = append(closers, reg.Close)
			a, err = toolagent.New(toolagent.Config{Bus: d.b, Model: d.chat, Tools: reg, Permissions: d.perms, Logger: d.log})
		case subworkflow.Capability:
			a, err = subworkflow.New(subworkflow.Config{Bus: d.b, Logger: d.log})
		case memory.Capability:
			var kv *bus.KV
			if kv, err = d.b.KV(ctx, subjects.BucketMemory); err != nil {
				return nil, close, fmt.Errorf("memory agent: %w", err)
			}
			a, err = memory.New(memory.Config{KV: kv, Embedder: d.embedder})
		default:
			return nil, close, &exitError{code: exitUsage, msg: fmt.Sprintf("--capabilities: unknown capability %q (built in: %s)", c, strings.Join(builtinNames(), ", "))}
		}
		if err != nil {
			return nil, close, &exitError{code: exitUsage, msg: fmt.Sprintf("%s agent: %v", c, err)}
		}
		list = append(list, a)
	}
	return list, close, nil
}

// searchAgent builds the search agent on b: with an LLM, its reranker
// asks the model to order the top 20 hits and keep 8, falling back to
// the deterministic reranker (and saying so in the output); without
// one, the deterministic reranker runs.
func searchAgent(b retrieval.Backend, chat *llm.Chat) (agents.Agent, error) {
	cfg := search.Config{Backend: b}
	if chat != nil {
		r, err := retrieval.NewLLM(retrieval.LLMConfig{Chat: chat})
		if err != nil {
			return nil, err
		}
		cfg.Reranker = r
	}
	return search.New(cfg)
}

// ingestAgent builds the ingest agent on the search backend and starts
// the document operations it answers (list, get, delete).
func ingestAgent(ctx context.Context, d agentDeps, b retrieval.Backend, closers *[]func()) (agents.Agent, error) {
	if u, ok := b.(interface{ Unwrap() retrieval.Backend }); ok {
		b = u.Unwrap() // timed for metrics; the ingest agent only writes
	}
	store, err := retrieval.AsDocumentStore(b)
	if err != nil {
		return nil, err
	}
	a, err := ingest.New(ingest.Config{Bus: d.b, Store: store})
	if err != nil {
		return nil, err
	}
	svc, err := a.Serve(ctx, d.b)
	if err != nil {
		return nil, err
	}
	*closers = append(*closers, func() { _ = svc.Stop() })
	return a, nil
}

// workerFlags are the flags of every command that runs agents.
type workerFlags struct {
	capabilities                       []string
	concurrency, maxDeliver            int
	ackWait, stepTimeout, heartbeat    time.Duration
	retryBase, retryMax, shutdownGrace time.Duration
	// handWait is --hand-wait; 0 turns handing off.
	handWait time.Duration
	// noEager is --no-eager.
	noEager bool
	// tracer, when set, records the workers' spans (otel.go).
	tracer trace.TracerProvider
	// web configures the web graph's agents (webflags.go).
	web webFlags
	// a2a serves remote A2A agents' skills (a2aflags.go).
	a2a a2aFlags
	// mcpServers are --mcp-server specs (mcptools.go).
	mcpServers []string
	// payloadThreshold is --payload-threshold (payloadflag.go).
	payloadThreshold payloadThreshold
}

func (f *workerFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.capabilities, "capabilities", builtinNames(), "built-in capabilities to serve ("+strings.Join(builtinNames(), ", ")+")")
	fl.IntVar(&f.concurrency, "concurrency", agents.DefaultConcurrency, "steps of one capability run at once by this process (a CPU-bound agent: about its cores)")
	fl.IntVar(&f.maxDeliver, "max-deliver", 5, "deliveries of a step before it is dead-lettered")
	fl.DurationVar(&f.ackWait, "ack-wait", 30*time.Second, "a step held this long without an in-progress ack is redelivered")
	fl.DurationVar(&f.stepTimeout, "step-timeout", 5*time.Minute, "bound on one run of a step")
	fl.DurationVar(&f.heartbeat, "heartbeat", 5*time.Second, "registry heartbeat; a registration lives three heartbeats")
	fl.DurationVar(&f.retryBase, "retry-base", 250*time.Millisecond, "first retry delay of a failing step (doubles each time)")
	fl.DurationVar(&f.retryMax, "retry-max", 10*time.Second, "longest retry delay")
	fl.DurationVar(&f.shutdownGrace, "shutdown-grace", 10*time.Second, "on SIGTERM, time for in-flight steps to finish before they are handed back")
	fl.DurationVar(&f.handWait, "hand-wait", 2*time.Second, "a step's answer is handed straight to an orchestrator, which records it before it says so; past this wait (at most a quarter of --ack-wait) it goes through the replies stream instead (0: always through the stream)")
	fl.BoolVar(&f.noEager, "no-eager", false, "never take a step back with the verdict on a handed answer (eager dispatch): every step is pulled from AGENTBUS_STEPS")
	fl.StringArrayVar(&f.mcpServers, "mcp-server", nil, mcpServerHelp)
	f.payloadThreshold = defaultPayloadThreshold
	fl.Var(&f.payloadThreshold, "payload-threshold", "a step output or artifact larger than this is stored in object store AGENTBUS_PAYLOADS and travels as a reference (256KiB, 1MiB, a byte count, or off)")
	f.web.register(cmd)
	f.a2a.register(cmd)
}

// worker builds the worker these flags describe; close releases what its
// agents opened, after the worker stopped.
func (f *workerFlags) worker(ctx context.Context, d agentDeps) (*agents.Worker, func(), error) {
	d.backend = d.metrics.searchBackend(d.backend)
	d.web = &f.web
	list, closeBuiltin, err := builtinAgents(ctx, f.capabilities, d)
	if err != nil {
		return nil, nil, err
	}
	tools, closeTools, err := mcpToolAgents(ctx, f.mcpServers, d.log)
	if err != nil {
		closeBuiltin()
		return nil, nil, err
	}
	list = append(list, tools...)
	remote, closeRemote, err := f.a2a.agents(ctx, d.log, list)
	if err != nil {
		closeTools()
		closeBuiltin()
		return nil, nil, err
	}
	list = append(list, remote...)
	closeAgents := func() { closeRemote(); closeTools(); closeBuiltin() }
	w, err := agents.NewWorker(agents.WorkerConfig{
		Bus: d.b, Agents: list, Concurrency: f.concurrency, MaxDeliver: f.maxDeliver, AckWait: f.ackWait,
		StepTimeout: f.stepTimeout, Heartbeat: f.heartbeat, RetryBase: f.retryBase, RetryMax: f.retryMax,
		ShutdownGrace: f.shutdownGrace, Logger: d.log, Metrics: d.metrics.workerMetrics(),
		TracerProvider: f.tracer, PayloadThreshold: int(f.payloadThreshold), HandWait: handWait(f.handWait), NoEager: f.noEager,
	})
	if err != nil {
		closeAgents()
		return nil, nil, &exitError{code: exitUsage, msg: err.Error()}
	}
	return w, closeAgents, nil
}

// handWait is --hand-wait as agents.WorkerConfig reads it: 0 there means
// the default, off is negative.
func handWait(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// defaultWorkerFlags are the flags' defaults, for callers that build
// serveFlags by hand (tests).
func defaultWorkerFlags() workerFlags {
	var f workerFlags
	f.register(&cobra.Command{})
	return f
}
