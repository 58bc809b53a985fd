package agents

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/subjects"
)

// Step outcomes, the "outcome" label of the worker's step metrics.
const (
	OutcomeCompleted = "completed" // replied step.completed
	OutcomeFailed    = "failed"    // gave up: replied step.failed (dead-lettered past MaxDeliver, or a permanent error)
	OutcomeRetried   = "retried"   // failed and handed back for a redelivery after a backoff
	OutcomeCanceled  = "canceled"  // stopped with its workflow
)

// Metrics are the worker runtime's Prometheus metrics. One Metrics serves
// every Worker of a process (WorkerConfig.Metrics): the collectors are
// registered once, on the registry cmd/ passes to NewMetrics. Safe for
// concurrent use; a nil *Metrics records nothing.
//
//	agentbus_worker_step_duration_seconds{capability,outcome}  histogram of each run of a step; its _count counts runs
//	agentbus_worker_queue_wait_seconds{capability}             histogram: the step request's publish (ce-time) → a worker starts it
//	agentbus_worker_steps_in_flight{capability}                gauge of steps running
//	agentbus_worker_redeliveries_total{capability}             deliveries of a step after its first
//	agentbus_worker_retries_total{capability}                  failed runs handed back for a redelivery
//	agentbus_worker_dead_letters_total{capability}             steps dead-lettered (answered step.failed)
//	agentbus_worker_answers_total{capability,way}              steps answered, "handed" straight to an orchestrator
//	                                                           or "streamed" through the replies stream
//	agentbus_worker_eager_steps_total{capability}              steps an orchestrator handed back with the verdict
//	                                                           on an answer, run without a pull (eager dispatch)
//	agentbus_worker_step_backlog{capability,state}             the shared step consumer's pending ("pending") and
//	                                                           delivered-but-unacknowledged ("ack_pending") steps,
//	                                                           read on scrape (cached BacklogTTL)
//
// Labels are bounded: a capability is one of the served ones; workflow
// and step ids never become labels (exemplars carry the trace id instead).
type Metrics struct {
	duration     *prometheus.HistogramVec
	queueWait    *prometheus.HistogramVec
	inFlight     *prometheus.GaugeVec
	redeliveries *prometheus.CounterVec
	retries      *prometheus.CounterVec
	deadLetters  *prometheus.CounterVec
	answers      *prometheus.CounterVec
	eagerSteps   *prometheus.CounterVec
	backlog      *backlog
}

// BacklogTTL is how long a scrape's reading of the step consumers is
// reused; BacklogTimeout bounds one reading.
const (
	BacklogTTL     = 3 * time.Second
	BacklogTimeout = 2 * time.Second
)

// stepBuckets span a cache hit (sub-millisecond) to a long LLM step.
var stepBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// NewMetrics creates the worker metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	const ns, sub = "agentbus", "worker"
	perCap := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, []string{"capability"})
	}
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "step_duration_seconds",
			Help: "Runs of steps by capability and outcome (completed, failed, retried, canceled), and how long they ran.", Buckets: stepBuckets},
			[]string{"capability", "outcome"}),
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "queue_wait_seconds",
			Help: "Time between a step request's publish and a worker starting it, by capability.", Buckets: stepBuckets},
			[]string{"capability"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "steps_in_flight",
			Help: "Steps running in this process, by capability."}, []string{"capability"}),
		redeliveries: perCap("redeliveries_total", "Deliveries of a step after its first (a retry, or a worker that died or hung)."),
		retries:      perCap("retries_total", "Failed runs handed back for a redelivery after a backoff."),
		deadLetters:  perCap("dead_letters_total", "Steps dead-lettered and answered step.failed."),
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "answers_total",
			Help: "Steps answered, by capability and way: handed straight to an orchestrator, or streamed through the replies stream."},
			[]string{"capability", "way"}),
		eagerSteps: perCap("eager_steps_total", "Steps an orchestrator handed back with the verdict on an answer, run in the slot that answered without a pull."),
		backlog:    &backlog{buses: map[string]*bus.Bus{}},
	}
	m.backlog.desc = prometheus.NewDesc(prometheus.BuildFQName(ns, sub, "step_backlog"),
		"Steps waiting on a capability's shared consumer: pending (not yet delivered) and ack_pending (delivered, not yet acknowledged).",
		[]string{"capability", "state"}, nil)
	for _, c := range []prometheus.Collector{m.duration, m.queueWait, m.inFlight, m.redeliveries, m.retries, m.deadLetters, m.answers, m.eagerSteps, m.backlog} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// serve shows a capability's series from the start, at 0, and adds its
// consumer to the backlog collector.
func (m *Metrics) serve(b *bus.Bus, capability string) {
	if m == nil {
		return
	}
	m.inFlight.WithLabelValues(capability)
	for _, c := range []*prometheus.CounterVec{m.redeliveries, m.retries, m.deadLetters, m.eagerSteps} {
		c.WithLabelValues(capability)
	}
	for _, way := range []string{AnswerHanded, AnswerStreamed} {
		m.answers.WithLabelValues(capability, way)
	}
	m.backlog.add(b, capability)
}

// started notes a delivery of a step that is about to run.
func (m *Metrics) started(ctx context.Context, capability string, delivered uint64, queued time.Duration) {
	if m == nil {
		return
	}
	if delivered > 1 {
		m.redeliveries.WithLabelValues(capability).Inc()
	} else {
		observe(ctx, m.queueWait.WithLabelValues(capability), queued.Seconds())
	}
	m.inFlight.WithLabelValues(capability).Inc()
}

// redelivered counts a delivery given up before it ran (the worker that
// held the previous one died or hung).
func (m *Metrics) redelivered(capability string) {
	if m != nil {
		m.redeliveries.WithLabelValues(capability).Inc()
	}
}

// finished notes the end of a run.
func (m *Metrics) finished(ctx context.Context, capability, outcome string, ran time.Duration) {
	if m == nil {
		return
	}
	m.inFlight.WithLabelValues(capability).Dec()
	observe(ctx, m.duration.WithLabelValues(capability, outcome), ran.Seconds())
	if outcome == OutcomeRetried {
		m.retries.WithLabelValues(capability).Inc()
	}
}

// Ways a step's answer went, the "way" label of agentbus_worker_answers_total.
const (
	AnswerHanded   = "handed"   // straight to an orchestrator, which recorded it
	AnswerStreamed = "streamed" // through the replies stream
)

// answered counts a step's answer that went way.
func (m *Metrics) answered(capability, way string) {
	if m != nil {
		m.answers.WithLabelValues(capability, way).Inc()
	}
}

// eager counts a step handed back with a verdict.
func (m *Metrics) eager(capability string) {
	if m != nil {
		m.eagerSteps.WithLabelValues(capability).Inc()
	}
}

// deadLettered counts a step given up.
func (m *Metrics) deadLettered(capability string) {
	if m != nil {
		m.deadLetters.WithLabelValues(capability).Inc()
	}
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

// backlogReader is what the backlog collector needs from the bus: a
// durable consumer's pending and ack-pending counts.
type backlogReader interface {
	ConsumerBacklog(ctx context.Context, stream, durable string) (pending, ackPending uint64, err error)
}

// backlog collects the step consumers' backlog on scrape, reading each at
// most once per BacklogTTL, so a busy Prometheus cannot load JetStream.
type backlog struct {
	desc  *prometheus.Desc
	mu    sync.Mutex
	buses map[string]*bus.Bus // capability → the bus to ask
	read  time.Time
	last  []prometheus.Metric
}

func (c *backlog) add(b *bus.Bus, capability string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buses[capability] = b
	c.read = time.Time{}
}

// Describe implements prometheus.Collector.
func (c *backlog) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *backlog) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.read) > BacklogTTL {
		c.last, c.read = c.readAll(), time.Now()
	}
	for _, m := range c.last {
		ch <- m
	}
}

func (c *backlog) readAll() []prometheus.Metric {
	ctx, cancel := context.WithTimeout(context.Background(), BacklogTimeout)
	defer cancel()
	var out []prometheus.Metric
	for capability, b := range c.buses {
		r, ok := any(b).(backlogReader)
		if !ok {
			return nil
		}
		durable, err := subjects.StepConsumer(capability)
		if err != nil {
			continue
		}
		pending, ackPending, err := r.ConsumerBacklog(ctx, subjects.StreamSteps, durable)
		if err != nil {
			continue // no reading is better than a wrong one
		}
		out = append(out,
			prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(pending), capability, "pending"),
			prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(ackPending), capability, "ack_pending"))
	}
	return out
}
