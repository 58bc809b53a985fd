package orchestrator

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/retention"
	"github.com/agentbus/agentbus/workflow"
)

// Workflow outcomes, the "outcome" label of the workflow metrics.
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
	OutcomeCanceled  = "canceled"
)

// Metrics are the orchestrator's Prometheus metrics. One Metrics may serve
// several Orchestrators of a process (Config.Metrics); its collectors are
// registered once, on the registry cmd/ passes to NewMetrics. Safe for
// concurrent use; a nil *Metrics records nothing.
//
// Everything is counted when the checkpoint write that decided it
// succeeded, so a transition retried on a revision conflict, or replayed
// by another orchestrator, counts once:
//
//	agentbus_orchestrator_workflows_started_total{tenant}             workflows created (planned or refused)
//	agentbus_orchestrator_workflows_finished_total{tenant,outcome}    workflows that ended completed, failed or canceled
//	agentbus_orchestrator_workflow_duration_seconds{tenant,outcome}   histogram: creation → end
//	agentbus_orchestrator_phase_seconds{phase}                        histogram of completed workflows' phases: planning,
//	                                                                  queue (sum of the steps' waits), action, end_to_end
//	agentbus_orchestrator_steps_finished_total{capability,outcome}    step replies recorded (completed or failed)
//	agentbus_orchestrator_step_queue_seconds{capability}              histogram: a recorded step's wait in the queue
//	agentbus_orchestrator_step_run_seconds{capability,outcome}        histogram: a recorded step's run on its worker
//	agentbus_orchestrator_step_fallbacks_total{capability}            failed steps handed to their plan's fallback capability
//	agentbus_orchestrator_step_redispatches_total{capability}         step attempts dispatched again by the watchdog (lost requests)
//	agentbus_orchestrator_recoveries_total{kind}                      what the reconciler recovered: submission (started from
//	                                                                  the stream), stepdown, redispatch (recover.go), lost
//	agentbus_orchestrator_planner_fallbacks_total                     LLM plans that fell back to the heuristic planner
//	agentbus_orchestrator_flow_queued_steps{tenant,capability}        steps waiting for admission to a busy capability (admission.go),
//	                                                                  as the admission loop last counted them
//	agentbus_orchestrator_flow_admitted_total{tenant,capability}      steps admitted from the queue
//	agentbus_orchestrator_flow_wait_seconds{tenant,capability}        histogram: an admitted step's wait in the queue
//	agentbus_orchestrator_flow_throttled_total{tenant,capability}     steps told they wait for their tenant's limit
//	agentbus_orchestrator_tokens_total{tenant,kind}                   model tokens the steps' replies said they spent (prompt, completion)
//	agentbus_retention_…                                              the retention sweep's (retention.Metrics)
//	agentbus_registry_instances{health}                               agent instances in the registry by health (read on
//	                                                                  scrape, cached a few seconds)
//
// Labels are bounded: tenants, capabilities, outcomes and phases; never a
// workflow or step id (histograms carry the trace id as an exemplar when
// the context has a span).
type Metrics struct {
	started          *prometheus.CounterVec
	finished         *prometheus.CounterVec
	duration         *prometheus.HistogramVec
	phases           *prometheus.HistogramVec
	steps            *prometheus.CounterVec
	stepQueue        *prometheus.HistogramVec
	stepRun          *prometheus.HistogramVec
	stepFallbacks    *prometheus.CounterVec
	redispatches     *prometheus.CounterVec
	recoveries       *prometheus.CounterVec
	plannerFallbacks prometheus.Counter
	instances        *instances
	flowQueued       *prometheus.GaugeVec
	flowAdmitted     *prometheus.CounterVec
	flowWait         *prometheus.HistogramVec
	flowThrottled    *prometheus.CounterVec
	tokens           *prometheus.CounterVec
	outboxClears     prometheus.Counter
	// concWaiting and concRunning count workflows under concurrency keys,
	// by tenant, as the checkpoint scan's lease holder last read them;
	// concSeen is which tenants' gauges were set.
	concWaiting, concRunning *prometheus.GaugeVec
	concSeen                 map[string]bool
	// retention are the retention sweep's (package retention lists them).
	retention *retention.Metrics
	// flowSeen is which queued gauges were set, so that a queue emptied
	// reads 0 rather than its last count.
	flowMu   sync.Mutex
	flowSeen map[[2]string]bool
}

// buckets span an offline step (sub-millisecond) to a long LLM workflow.
var buckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// NewMetrics creates the orchestrator metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	const ns, sub = "agentbus", "orchestrator"
	hist := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help, Buckets: buckets}, labels)
	}
	count := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
	}
	m := &Metrics{
		started:   count("workflows_started_total", "Workflows created, by tenant.", "tenant"),
		finished:  count("workflows_finished_total", "Workflows ended, by tenant and outcome (completed, failed, canceled).", "tenant", "outcome"),
		duration:  hist("workflow_duration_seconds", "Workflows from creation to their end, by tenant and outcome.", "tenant", "outcome"),
		phases:    hist("phase_seconds", "Completed workflows' phases: planning, queue (the steps' waits summed), action, end_to_end.", "phase"),
		steps:     count("steps_finished_total", "Step replies recorded, by capability and outcome (completed, failed).", "capability", "outcome"),
		stepQueue: hist("step_queue_seconds", "Recorded steps' wait between dispatch and a worker starting them, by capability.", "capability"),
		stepRun:   hist("step_run_seconds", "Recorded steps' run on their worker, by capability and outcome.", "capability", "outcome"),
		stepFallbacks: count("step_fallbacks_total",
			"Failed steps dispatched again to their plan's fallback capability, by the capability that failed.", "capability"),
		redispatches: count("step_redispatches_total", "Step attempts dispatched again by the watchdog after their request was lost.", "capability"),
		recoveries: count("recoveries_total",
			"What the reconciler recovered: submission (a stored submission started from the stream), stepdown (a held step's consumer leader stepped down), redispatch (a held step dispatched again, fenced), lost (a lost step dispatched again).", "kind"),
		plannerFallbacks: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "planner_fallbacks_total",
			Help: "Queries the LLM planner could not plan, planned by its fallback."}),
		instances: &instances{desc: prometheus.NewDesc("agentbus_registry_instances",
			"Agent instances in the registry by health (healthy, unhealthy, unreachable).", []string{"health"}, nil)},
		flowQueued: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "flow_queued_steps",
			Help: "Steps waiting for admission to a busy capability, by tenant and capability."}, []string{"tenant", "capability"}),
		flowAdmitted: count("flow_admitted_total", "Steps admitted from their capability's queue, by tenant and capability.", "tenant", "capability"),
		flowWait:     hist("flow_wait_seconds", "Admitted steps' wait in their capability's queue, by tenant and capability.", "tenant", "capability"),
		flowSeen:     map[[2]string]bool{},
		tokens:       count("tokens_total", "Model tokens the steps' replies said they spent, by tenant and kind (prompt, completion).", "tenant", "kind"),
		outboxClears: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "outbox_clears_total",
			Help: "Writes that cleared a running workflow's published outbox because no transition replaced it within --clear-delay."}),
		concWaiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "concurrency_waiting_workflows",
			Help: "Workflows waiting for a slot of their concurrency key, by tenant, as the checkpoint scan's lease holder read the keys (other orchestrators report 0: sum across them)."}, []string{"tenant"}),
		concRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "concurrency_running_workflows",
			Help: "Workflows holding a slot of their concurrency key, by tenant, as the checkpoint scan's lease holder read the keys (other orchestrators report 0)."}, []string{"tenant"}),
		concSeen: map[string]bool{},
		flowThrottled: count("flow_throttled_total", "Steps told they wait in their queue for their tenant's limit (in flight or rate), by tenant and capability.",
			"tenant", "capability"),
	}
	for _, c := range []prometheus.Collector{m.started, m.finished, m.duration, m.phases, m.steps, m.stepQueue, m.stepRun,
		m.stepFallbacks, m.redispatches, m.recoveries, m.plannerFallbacks, m.instances, m.flowQueued, m.flowAdmitted, m.flowWait, m.flowThrottled, m.tokens, m.outboxClears, m.concWaiting, m.concRunning} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	var err error
	if m.retention, err = retention.NewMetrics(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// created counts a workflow whose first checkpoint was stored, and what
// its first transition did.
func (m *Metrics) created(ctx context.Context, cp *workflow.Checkpoint, eff workflow.Effects) {
	if m == nil {
		return
	}
	m.started.WithLabelValues(cp.TenantID).Inc()
	m.observe(ctx, cp, eff)
}

// observe counts what a stored transition did, from the transitions the
// engine returned: steps recorded, fallbacks, watchdog dispatches, and the
// workflow's end.
func (m *Metrics) observe(ctx context.Context, cp *workflow.Checkpoint, eff workflow.Effects) {
	if m == nil {
		return
	}
	if u := eff.Usage; u.Tokens() > 0 {
		m.tokens.WithLabelValues(cp.TenantID, "prompt").Add(float64(u.PromptTokens))
		m.tokens.WithLabelValues(cp.TenantID, "completion").Add(float64(u.CompletionTokens))
	}
	for _, tr := range eff.Transitions {
		if tr.StepID == "" {
			continue
		}
		switch tr.Cause {
		case workflow.CauseFallback:
			m.stepFallbacks.WithLabelValues(tr.Capability).Inc()
		case workflow.CauseRedispatch:
			m.redispatches.WithLabelValues(tr.Capability).Inc()
		case workflow.CauseReply:
			t := cp.Tasks[tr.StepID]
			outcome := OutcomeCompleted
			if tr.To == events.StateFailed {
				outcome = OutcomeFailed
			}
			m.steps.WithLabelValues(tr.Capability, outcome).Inc()
			observe(ctx, m.stepQueue.WithLabelValues(tr.Capability), t.QueuedMS/1000)
			observe(ctx, m.stepRun.WithLabelValues(tr.Capability, outcome), t.RunMS/1000)
		}
	}
	if eff.Outcome == "" {
		return
	}
	outcome := OutcomeCompleted
	switch eff.Outcome {
	case events.StateFailed, events.StateRejected:
		outcome = OutcomeFailed
	case events.StateCanceled:
		outcome = OutcomeCanceled
	}
	m.finished.WithLabelValues(cp.TenantID, outcome).Inc()
	observe(ctx, m.duration.WithLabelValues(cp.TenantID, outcome), cp.UpdatedAt.Sub(cp.CreatedAt).Seconds())
	if l := cp.PhaseLatency; l != nil && outcome == OutcomeCompleted {
		for phase, ms := range map[string]float64{"planning": l.PlanningMS, "queue": l.QueueMS, "action": l.ActionMS, "end_to_end": l.EndToEndMS} {
			observe(ctx, m.phases.WithLabelValues(phase), ms/1000)
		}
	}
}

// queued sets the queued-steps gauges from an admission round's count.
func (m *Metrics) queued(ws []bus.Waiting) {
	if m == nil {
		return
	}
	sums := map[[2]string]float64{}
	for _, w := range ws {
		sums[[2]string{w.Tenant, w.Capability}] += float64(w.Count)
	}
	m.flowMu.Lock()
	defer m.flowMu.Unlock()
	for k := range m.flowSeen {
		if _, ok := sums[k]; !ok {
			m.flowQueued.WithLabelValues(k[0], k[1]).Set(0)
		}
	}
	for k, n := range sums {
		m.flowSeen[k] = true
		m.flowQueued.WithLabelValues(k[0], k[1]).Set(n)
	}
}

// concurrency sets the concurrency-key gauges from the keys' counts by
// tenant; nil counts (an orchestrator not holding the scan lease) set
// every tenant seen to 0.
func (m *Metrics) concurrency(waiting, running map[string]int) {
	if m == nil {
		return
	}
	m.flowMu.Lock()
	defer m.flowMu.Unlock()
	for t := range m.concSeen {
		m.concWaiting.WithLabelValues(t).Set(float64(waiting[t]))
		m.concRunning.WithLabelValues(t).Set(float64(running[t]))
	}
	for t, n := range waiting {
		m.concSeen[t] = true
		m.concWaiting.WithLabelValues(t).Set(float64(n))
	}
	for t, n := range running {
		m.concSeen[t] = true
		m.concRunning.WithLabelValues(t).Set(float64(n))
	}
}

// admitted counts a step admitted after waiting in its queue.
func (m *Metrics) admitted(tenant, capability string, wait time.Duration) {
	if m == nil {
		return
	}
	m.flowAdmitted.WithLabelValues(tenant, capability).Inc()
	m.flowWait.WithLabelValues(tenant, capability).Observe(wait.Seconds())
}

// throttledStep counts a step told it waits for its tenant's limit.
func (m *Metrics) throttledStep(tenant, capability string) {
	if m == nil {
		return
	}
	m.flowThrottled.WithLabelValues(tenant, capability).Inc()
}

// recovered counts one recovery of the reconciler.
func (m *Metrics) recovered(kind string) {
	if m == nil {
		return
	}
	m.recoveries.WithLabelValues(kind).Inc()
}

// observe records v, with the trace id of ctx's span as an exemplar when
// there is one.
func observe(ctx context.Context, o prometheus.Observer, v float64) {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		if eo, ok := o.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	o.Observe(v)
}

// planner wraps an LLM planner's fallback so that using it is counted.
func (m *Metrics) planner(p Planner) Planner {
	lp, ok := p.(*LLMPlanner)
	if m == nil || !ok || lp.Fallback == nil {
		return p
	}
	c := *lp
	c.Fallback = countedPlanner{Planner: lp.Fallback, n: m.plannerFallbacks}
	return &c
}

// countedPlanner counts its plans.
type countedPlanner struct {
	Planner
	n prometheus.Counter
}

func (p countedPlanner) Plan(ctx context.Context, query string, agents []discovery.Match) (events.Plan, string, error) {
	p.n.Inc()
	return p.Planner.Plan(ctx, query, agents)
}

// watch makes the registry gauge read reg.
func (m *Metrics) watch(reg *discovery.Registry) {
	if m == nil || reg == nil {
		return
	}
	m.instances.mu.Lock()
	defer m.instances.mu.Unlock()
	if m.instances.reg == nil {
		m.instances.reg = reg
	}
}

// InstancesTTL is how long a reading of the registry is reused by scrapes.
const InstancesTTL = 3 * time.Second

// instances collects the registry's instances by health on scrape.
type instances struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	reg  *discovery.Registry
	read time.Time
	last map[discovery.Health]int
}

// Describe implements prometheus.Collector.
func (c *instances) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *instances) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reg == nil {
		return
	}
	if time.Since(c.read) > InstancesTTL {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		list, err := c.reg.List(ctx)
		cancel()
		if err == nil {
			c.last, c.read = map[discovery.Health]int{}, time.Now()
			for _, in := range list {
				c.last[in.Health]++
			}
		}
	}
	for _, h := range []discovery.Health{discovery.Healthy, discovery.Unhealthy, discovery.Unreachable} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.last[h]), string(h))
	}
}

// outboxClear counts a deferred write that cleared a published outbox.
func (m *Metrics) outboxClear() {
	if m != nil {
		m.outboxClears.Inc()
	}
}
