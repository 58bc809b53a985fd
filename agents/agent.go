package agents

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentbus/agentbus/events"
)

// Request is one plan step as an agent sees it.
type Request struct {
	TenantID   string
	WorkflowID string
	StepID     string
	Capability string
	Attempt    int
	// Delivery counts deliveries of this step message, from 1; above 1 it
	// is a redelivery (a retry, or a worker that died holding it).
	Delivery int
	// Query is the workflow's original query, for context.
	Query string
	// Input is the step's input from the plan (any JSON, possibly empty).
	Input json.RawMessage
	// DependencyOutputs holds the output of every step this one depends on.
	DependencyOutputs map[string]json.RawMessage
	// Conversation is the session this workflow is a turn of; nil outside
	// a session.
	Conversation *events.Conversation
	// Problems are the workflow's steps that failed or were skipped before
	// this one was requested.
	Problems []events.StepProblem
	// User is whom the workflow runs for, when the submission named one.
	User string
	// Role is the role of the token that submitted the workflow, when the
	// gateway knew one (the tool permissions apply its rules).
	Role string
	// timeout is the plan's limit for this step, if any.
	timeout time.Duration
	// queuedMS and runMS are the run's wait and duration, for a reply.
	queuedMS, runMS float64
	// usage is what the run spent on models (its reply carries it).
	usage *events.Usage
	// served is the capability whose consumer delivered the step: the
	// metrics' label, one of the served ones whatever the request says.
	served string
}

// Emitter publishes a running step's client events to its workflow's event
// stream. It is safe for concurrent use.
type Emitter interface {
	// Progress reports how far the step is, percent in [0, 100].
	Progress(ctx context.Context, percent float64, message string) error
	// Artifact publishes a result or a chunk of one; chunks of one artifact
	// share id, append says "add to the previous chunk", last closes it.
	Artifact(ctx context.Context, id, name string, data any, appendChunk, last bool) error
}

// Handler runs one step and returns its output (JSON).
type Handler interface {
	Handle(ctx context.Context, req Request, emit Emitter) (json.RawMessage, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req Request, emit Emitter) (json.RawMessage, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req Request, emit Emitter) (json.RawMessage, error) {
	return f(ctx, req, emit)
}

// Card describes an agent to the registry, to discovery and to people.
type Card struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	Version      string   `json:"version"`
	Capabilities []string `json:"capabilities"`
	Examples     []string `json:"examples,omitempty"`
	// InputSchemas holds, by capability, the JSON Schema a step's input
	// must satisfy, for the capabilities that have one. It is registered
	// with the agent, so that an orchestrator or gateway refuses a plan
	// whose input does not fit before any step is dispatched. The worker
	// reads it again at every heartbeat: an agent whose schemas change
	// while it runs (an MCP server's tools) may return new ones.
	InputSchemas map[string]json.RawMessage `json:"input_schemas,omitempty"`
}

// Agent is a Handler with a Card.
type Agent interface {
	Handler
	Card() Card
}

// HealthChecker is implemented by agents that can tell whether they are
// fit to work (a model endpoint reachable, an index loaded). The worker
// calls it on every heartbeat; an error makes the instance "unhealthy".
type HealthChecker interface {
	Health(ctx context.Context) error
}

// ErrPermanent marks an agent error that retrying cannot fix: the step is
// dead-lettered at once instead of retried.
var ErrPermanent = errors.New("agents: permanent failure")
