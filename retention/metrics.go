package retention

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the sweep's Prometheus metrics, registered once on the
// registry given to NewMetrics. Safe for concurrent use; a nil *Metrics
// records nothing.
//
//	agentbus_retention_workflows_purged_total{status}   ended workflows the sweep purged, by how they ended
//	agentbus_retention_messages_purged_total{store}     messages those purges removed: checkpoint (revisions), events,
//	                                                    other (replies, timers, control records)
//	agentbus_retention_pass_duration_seconds            histogram: one pass of the lease holder
//	agentbus_retention_errors_total                     passes that met an error (the pass goes on from there next time)
//
// Bytes are not counted: JetStream's purge answers how many messages it
// removed, not their size.
type Metrics struct {
	purged   *prometheus.CounterVec
	messages *prometheus.CounterVec
	pass     prometheus.Histogram
	errors   prometheus.Counter
}

// NewMetrics makes the sweep's metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		purged: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "agentbus", Subsystem: "retention", Name: "workflows_purged_total",
			Help: "Ended workflows the retention sweep purged, by status (completed, failed, canceled, rejected)."}, []string{"status"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "agentbus", Subsystem: "retention", Name: "messages_purged_total",
			Help: "Messages the retention sweep's purges removed, by store (checkpoint, events, other)."}, []string{"store"}),
		pass: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "agentbus", Subsystem: "retention", Name: "pass_duration_seconds",
			Help: "One retention sweep pass of the lease holder.", Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60}}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "agentbus", Subsystem: "retention", Name: "errors_total",
			Help: "Retention sweep passes that met an error."}),
	}
	for _, c := range []prometheus.Collector{m.purged, m.messages, m.pass, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) purgedOne(p Purged) {
	if m == nil {
		return
	}
	m.purged.WithLabelValues(string(p.Status)).Inc()
	m.messages.WithLabelValues("checkpoint").Add(float64(p.Revisions))
	m.messages.WithLabelValues("events").Add(float64(p.Events))
	m.messages.WithLabelValues("other").Add(float64(p.Messages))
}

func (m *Metrics) passed(seconds float64, failed bool) {
	if m == nil {
		return
	}
	m.pass.Observe(seconds)
	if failed {
		m.errors.Inc()
	}
}
