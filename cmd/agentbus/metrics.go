package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/orchestrator"
	"github.com/agentbus/agentbus/retrieval"
)

// appMetrics is one process's Prometheus registry with the metrics of the
// roles it runs: the orchestrator's and the workers' (their packages
// define them), and the LLM and search metrics cmd/ observes itself:
//
//	agentbus_llm_calls_total{model,outcome}                 chat completions by outcome (ok, timeout, status, no_answer, error)
//	agentbus_llm_call_duration_seconds{model,outcome}       histogram of their latency, retries included
//	agentbus_llm_tokens_total{model,kind}                   tokens the server reported, kind "prompt" or "completion"
//	agentbus_search_duration_seconds{profile,outcome}       histogram of one profile's search (ok or error)
//
// A nil *appMetrics records nothing. Safe for concurrent use.
type appMetrics struct {
	reg          *prometheus.Registry
	orchestrator *orchestrator.Metrics
	worker       *agents.Metrics
	llmCalls     *prometheus.HistogramVec
	llmTokens    *prometheus.CounterVec
	search       *prometheus.HistogramVec
}

// newAppMetrics makes a registry with the metrics of the roles named;
// runtime adds the go_* and process_* collectors (a serve leaves them to
// its gateway, whose /metrics serves this registry too).
func newAppMetrics(orch, worker, runtime bool) (*appMetrics, error) {
	m := &appMetrics{reg: prometheus.NewRegistry()}
	var err error
	if orch {
		if m.orchestrator, err = orchestrator.NewMetrics(m.reg); err != nil {
			return nil, err
		}
	}
	if worker {
		if m.worker, err = agents.NewMetrics(m.reg); err != nil {
			return nil, err
		}
		m.search = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "agentbus", Subsystem: "search", Name: "duration_seconds",
			Help:    "Searches of one profile by profile and outcome (ok, error).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}}, []string{"profile", "outcome"})
		m.reg.MustRegister(m.search)
	}
	m.llmCalls = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "agentbus", Subsystem: "llm", Name: "call_duration_seconds",
		Help:    "Chat completions by model and outcome (ok, timeout, status, no_answer, error), and their latency.",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 60}}, []string{"model", "outcome"})
	m.llmTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "agentbus", Subsystem: "llm", Name: "tokens_total",
		Help: "Tokens the LLM server reported, by model and kind (prompt, completion)."}, []string{"model", "kind"})
	m.reg.MustRegister(m.llmCalls, m.llmTokens)
	if runtime {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m, nil
}

func (m *appMetrics) orchestratorMetrics() *orchestrator.Metrics {
	if m == nil {
		return nil
	}
	return m.orchestrator
}

func (m *appMetrics) workerMetrics() *agents.Metrics {
	if m == nil {
		return nil
	}
	return m.worker
}

// gatherer is the registry, or nil.
func (m *appMetrics) gatherer() prometheus.Gatherer {
	if m == nil {
		return nil
	}
	return m.reg
}

// observeLLM is a llm.ChatConfig.Observe that counts calls; nil without
// metrics. The model is a label: one per configured model, bounded.
func (m *appMetrics) observeLLM() func(llm.Call) {
	if m == nil {
		return nil
	}
	return func(c llm.Call) {
		outcome := c.Outcome()
		m.llmCalls.WithLabelValues(c.Model, outcome).Observe(c.Duration.Seconds())
		if c.PromptTokens > 0 {
			m.llmTokens.WithLabelValues(c.Model, "prompt").Add(float64(c.PromptTokens))
		}
		if c.CompletionTokens > 0 {
			m.llmTokens.WithLabelValues(c.Model, "completion").Add(float64(c.CompletionTokens))
		}
	}
}

// searchBackend wraps open so that the backend it opens times every
// profile's search.
func (m *appMetrics) searchBackend(open func() (retrieval.Backend, error)) func() (retrieval.Backend, error) {
	if m == nil || m.search == nil || open == nil {
		return open
	}
	return func() (retrieval.Backend, error) {
		b, err := open()
		if err != nil {
			return nil, err
		}
		return timedBackend{Backend: b, hist: m.search}, nil
	}
}

// timedBackend observes the latency of each Search by profile, with the
// trace id of the search's span as an exemplar; a profile
// the backend does not offer is labelled "unknown", so that labels stay
// bounded whatever a step's input names.
type timedBackend struct {
	retrieval.Backend
	hist *prometheus.HistogramVec
}

// Unwrap returns the backend timed, for what it offers beyond Backend
// (a retrieval.DocumentStore).
func (b timedBackend) Unwrap() retrieval.Backend { return b.Backend }

func (b timedBackend) Search(ctx context.Context, tenant, profile string, q retrieval.Query) ([]retrieval.Hit, error) {
	start := time.Now()
	hits, err := b.Backend.Search(ctx, tenant, profile, q)
	label := profile
	if !slices.Contains(b.Profiles(), profile) {
		label = "unknown"
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	o := b.hist.WithLabelValues(label, outcome)
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		o.(prometheus.ExemplarObserver).ObserveWithExemplar(time.Since(start).Seconds(), prometheus.Labels{"trace_id": sc.TraceID().String()})
		return hits, err
	}
	o.Observe(time.Since(start).Seconds())
	return hits, err
}

// metricsFlags is --metrics-addr of the roles without an HTTP port of
// their own (orchestrator, worker).
type metricsFlags struct{ addr string }

func (f *metricsFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.addr, "metrics-addr", "", "serve Prometheus metrics at http://HOST:PORT/metrics (empty: off; port 0 picks one, logged in the ready line)")
}

// on reports whether metrics were asked for.
func (f *metricsFlags) on() bool { return f.addr != "" }

// serveMetrics listens on addr and serves m's registry at /metrics until
// ctx ends; it returns the bound address. A listen failure is a usage
// error naming the flag.
func serveMetrics(ctx context.Context, addr string, m *appMetrics, log *slog.Logger) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("--metrics-addr %s: %v", addr, err)}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics server stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}

// metricsURL is where serveMetrics serves, for the ready line.
func metricsURL(a net.Addr) string { return "http://" + a.String() + "/metrics" }
