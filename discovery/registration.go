package discovery

import (
	"encoding/json"
	"strings"
	"time"
)

// Health is an agent instance's health as readers see it.
type Health string

// The health states.
const (
	// Healthy: heartbeats arrive on time and the agent reports itself well.
	Healthy Health = "healthy"
	// Unhealthy: heartbeats arrive, but the agent's health check fails or
	// its recent steps keep failing (see Registration.HealthError).
	Unhealthy Health = "unhealthy"
	// Unreachable: no heartbeat for more than two intervals (the process
	// is frozen, partitioned or dying); the registration expires after three.
	Unreachable Health = "unreachable"
)

// Registration is one agent instance in a worker process, as stored in KV
// AGENTBUS_AGENTS under its Instance key.
type Registration struct {
	Instance     string   `json:"instance"`
	Worker       string   `json:"worker"`
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Description  string   `json:"description"`
	Capabilities []string `json:"capabilities"`
	Examples     []string `json:"examples,omitempty"`
	// InputSchemas holds, by capability, the JSON Schema the agent checks
	// a step's input against (agents.Card.InputSchemas); CheckInputs
	// checks a plan's inputs against it before dispatch.
	InputSchemas map[string]json.RawMessage `json:"input_schemas,omitempty"`
	Host         string                     `json:"host"`
	PID          int                        `json:"pid"`
	// ServiceID is the NATS micro service id ($SRV.PING shows it).
	ServiceID   string    `json:"service_id,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// HeartbeatMS is the heartbeat interval the worker promises.
	HeartbeatMS int64 `json:"heartbeat_ms"`
	// SelfHealthy is the worker's own verdict; HealthError says why not.
	SelfHealthy bool   `json:"self_healthy"`
	HealthError string `json:"health_error,omitempty"`
	InFlight    int64  `json:"in_flight"`
	// Slots is how many steps of each of its capabilities the instance's
	// worker runs at once (its concurrency); 0 if it does not say (an
	// agent in another language).
	Slots     int     `json:"slots,omitempty"`
	Processed uint64  `json:"processed"`
	Errors    uint64  `json:"errors"`
	AvgMS     float64 `json:"avg_ms"`
	// Embedder names the embedder of Embedding; EmbeddingText is what was
	// embedded, so a reader with another embedder can embed it again.
	Embedder      string    `json:"embedder"`
	EmbeddingText string    `json:"embedding_text"`
	Embedding     []float32 `json:"embedding,omitempty"`
}

// Health classifies the instance at time now.
func (r Registration) Health(now time.Time) Health {
	interval := time.Duration(r.HeartbeatMS) * time.Millisecond
	if interval <= 0 {
		interval = DefaultHeartbeat
	}
	if now.Sub(r.HeartbeatAt) > 2*interval {
		return Unreachable
	}
	if !r.SelfHealthy {
		return Unhealthy
	}
	return Healthy
}

// EmbeddingText is the text an agent is embedded by: its name, capabilities,
// description and example queries.
func EmbeddingText(name string, capabilities []string, description string, examples []string) string {
	parts := append([]string{name, strings.Join(capabilities, " "), description}, examples...)
	return strings.Join(parts, "\n")
}

// DefaultHeartbeat is the heartbeat interval when none is configured.
const DefaultHeartbeat = 5 * time.Second
