package agents

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/subjects"
)

// heartbeat (re)registers every agent with fresh stats and health, with a
// TTL of three heartbeats.
func (w *Worker) heartbeat(ctx context.Context) {
	now := time.Now().UTC()
	for _, r := range w.agents {
		reg := w.registration(ctx, r, now)
		if err := w.registry.Put(ctx, reg, 3*w.cfg.Heartbeat); err != nil && ctx.Err() == nil {
			w.log.Warn("heartbeat", "agent", r.card.Name, "err", err)
		}
	}
}

func (w *Worker) registration(ctx context.Context, r *running, now time.Time) discovery.Registration {
	s := r.stats.snapshot()
	reg := discovery.Registration{
		Instance: r.instance, Worker: w.cfg.Name, Name: r.card.Name, Version: r.card.Version,
		Description: r.card.Description, Capabilities: r.card.Capabilities, Examples: r.card.Examples,
		Host: w.host, PID: os.Getpid(), StartedAt: w.started, HeartbeatAt: now,
		HeartbeatMS: w.cfg.Heartbeat.Milliseconds(), SelfHealthy: true,
		InFlight: s.InFlight, Processed: s.Processed, Errors: s.Errors, AvgMS: s.AvgMS, Slots: w.cfg.Concurrency,
		Embedder: w.cfg.Embedder.Name(), EmbeddingText: r.text, Embedding: r.vector,
		InputSchemas: inputSchemas(r),
	}
	if r.service != nil {
		reg.ServiceID = r.service.ID()
	}
	if hc, ok := r.agent.(HealthChecker); ok {
		hctx, cancel := context.WithTimeout(ctx, max(w.cfg.Heartbeat/2, 100*time.Millisecond))
		err := hc.Health(hctx)
		cancel()
		if err != nil {
			reg.SelfHealthy, reg.HealthError = false, "health check: "+err.Error()
		}
	}
	if reg.SelfHealthy && s.Failing != "" {
		reg.SelfHealthy, reg.HealthError = false, "5 or more consecutive step failures, last: "+s.Failing
	}
	return reg
}

// serviceConfig describes an agent as a NATS micro service: one endpoint per
// capability answering with the card and live stats; $SRV.STATS carries the
// stats too.
func (w *Worker) serviceConfig(r *running) bus.ServiceConfig {
	version := r.card.Version
	if version == "" {
		version = "0.0.0"
	}
	cfg := bus.ServiceConfig{
		Name: "agentbus-" + r.card.Name, Version: version, Description: r.card.Description,
		Metadata: map[string]string{"worker": w.cfg.Name, "instance": r.instance},
		// A capability's requests are the steps it ran (pulled from
		// JetStream, not asked on the endpoint): `nats micro stats` shows
		// steps, failures and time spent running them, per capability.
		Stats: func(capability string) bus.EndpointStats {
			if s, ok := r.byCapability[capability]; ok {
				return s.endpoint()
			}
			return bus.EndpointStats{}
		},
	}
	for _, c := range r.card.Capabilities {
		subj, _ := subjects.AgentCard(c)
		cfg.Endpoints = append(cfg.Endpoints, bus.Endpoint{
			Name: c, Subject: subj, Metadata: map[string]string{"capability": c},
			Handle: func(context.Context, []byte) ([]byte, error) {
				return json.Marshal(struct {
					Card
					Instance string   `json:"instance"`
					Stats    Snapshot `json:"stats"`
				}{r.card, r.instance, r.stats.snapshot()})
			},
		})
	}
	return cfg
}

// inputSchemas is the agent's input schemas now, of the capabilities it
// serves: its card is asked again because they may change while it runs.
func inputSchemas(r *running) map[string]json.RawMessage {
	all := r.agent.Card().InputSchemas
	if len(all) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(all))
	for _, c := range r.card.Capabilities {
		if s, ok := all[c]; ok {
			out[c] = s
		}
	}
	return out
}
