package orchestrator

import (
	"context"
	"fmt"

	"github.com/agentbus/agentbus/retention"
)

// Retention: a workflow that ended is kept for its period
// (Config.Retention), then purged with everything it left — checkpoint,
// events, session turn, upload — by the sweep of package retention, which
// every orchestrator runs and one at a time does (a lease in
// AGENTBUS_LEASES). The sweep reads the checkpoint bucket on its own,
// never a transition's path; a workflow that has not ended is never
// purged. Everything else meets a purged workflow as one that never was: a
// late timer, reply or control message finds no checkpoint and is dropped.

// newSweeper makes the retention sweep, nil when Config.RetentionInterval
// turns it off.
func (o *Orchestrator) newSweeper(ctx context.Context) (*retention.Sweeper, error) {
	if o.cfg.RetentionInterval < 0 {
		return nil, nil
	}
	s, err := retention.New(ctx, retention.Config{Bus: o.bus, Policy: o.cfg.Retention, Sessions: o.sessions,
		Interval: o.cfg.RetentionInterval, Logger: o.cfg.Logger, Metrics: o.cfg.Metrics.retentionMetrics()})
	if err != nil {
		return nil, fmt.Errorf("orchestrator: %w", err)
	}
	return s, nil
}

func (m *Metrics) retentionMetrics() *retention.Metrics {
	if m == nil {
		return nil
	}
	return m.retention
}
