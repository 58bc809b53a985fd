package subworkflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/agents/subflow"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
)

// Capability is the sub-workflow agent's capability.
const Capability = "workflow"

// source is the CloudEvent source of the agent's submissions.
const source = events.SourceAgentPrefix + Capability

// MaxTimeout bounds an input's timeout, as a submission's timeout_ms is
// bounded.
const MaxTimeout = 7 * 24 * time.Hour

// Config configures an Agent. Bus is required; the zero value of every
// other field means its default.
type Config struct {
	// Bus is where children are submitted and followed.
	Bus *bus.Bus
	// MaxDepth bounds how deep workflows nest; default
	// subflow.DefaultMaxDepth.
	MaxDepth int
	Logger   *slog.Logger
}

// Agent serves capability "workflow". It is safe for concurrent use.
type Agent struct {
	children *subflow.Runner
	schema   json.RawMessage
}

var _ agents.Agent = (*Agent)(nil)

// New checks cfg and returns the agent.
func New(cfg Config) (*Agent, error) {
	if cfg.Bus == nil {
		return nil, errors.New("subworkflow: config needs Bus")
	}
	children, err := subflow.New(subflow.Config{Bus: cfg.Bus, Source: source, MaxDepth: cfg.MaxDepth, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("subworkflow: %w", err)
	}
	schema, err := schemas.Source(agentkit.InputSchema(Capability))
	if err != nil {
		return nil, fmt.Errorf("subworkflow: %w", err)
	}
	return &Agent{children: children, schema: schema}, nil
}

// Card describes the agent; it registers its input schema, so that a
// plan whose workflow step has a bad input is refused at submission.
func (a *Agent) Card() agents.Card {
	return agents.Card{Name: "sub-workflow", Version: "1.0.0", Capabilities: []string{Capability},
		Description:  "Runs a query or a plan as a child workflow and returns its result; canceling the parent cancels the child.",
		InputSchemas: map[string]json.RawMessage{Capability: a.schema}}
}

// Input is the agent's step input.
type Input struct {
	Query    string            `json:"query,omitempty"`
	Plan     *events.Plan      `json:"plan,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Timeout is a Go duration ("10m").
	Timeout string `json:"timeout,omitempty"`
}

// Output is the agent's step output: the child's result.
type Output struct {
	ChildWorkflowID string          `json:"child_workflow_id"`
	Result          json.RawMessage `json:"result"`
	// Attached says this run re-attached to a child an earlier delivery
	// of the step had started.
	Attached bool `json:"attached,omitempty"`
}

// Handle runs the step's child workflow to its end.
func (a *Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	var in Input
	if err := agentkit.Decode(req, agentkit.InputSchema(Capability), &in); err != nil {
		return nil, err
	}
	child, err := a.child(req, in)
	if err != nil {
		return nil, fmt.Errorf("%w: step %q input: %w", agents.ErrPermanent, req.StepID, err)
	}
	_ = emit.Progress(ctx, 0, fmt.Sprintf("child workflow %s: running", child.ID))
	o, err := a.children.Run(ctx, req, emit, child)
	if err != nil {
		return nil, err
	}
	_ = emit.Progress(ctx, 100, fmt.Sprintf("child workflow %s: %s", child.ID, o.State))
	if err := o.Err(); err != nil {
		// The child ran: running it again would not undo what it did.
		return nil, fmt.Errorf("%w: %w", agents.ErrPermanent, err)
	}
	result := o.Result
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	return agentkit.Encode(agentkit.OutputSchema(Capability), Output{ChildWorkflowID: o.WorkflowID, Result: result, Attached: o.Attached})
}

// child is the child workflow of a step's input, which the schema has
// checked; what it cannot check is reported with its JSON pointer.
func (a *Agent) child(req agents.Request, in Input) (subflow.Child, error) {
	c := subflow.Child{ID: subflow.ID("sw-", req), Query: strings.TrimSpace(in.Query), Plan: in.Plan, Metadata: in.Metadata, Label: "child workflow"}
	switch {
	case in.Query != "" && in.Plan != nil:
		return c, errors.New("/: give exactly one of query and plan, not both")
	case in.Query == "" && in.Plan == nil:
		return c, errors.New("/: give one of query (the child is planned) and plan")
	}
	for _, k := range slices.Sorted(maps.Keys(in.Metadata)) {
		if subflow.Reserved(k) {
			return c, fmt.Errorf("/metadata/%s: set by the agent (the child's parent and depth), not by the input", k)
		}
	}
	if in.Plan != nil {
		// The plan as given: decoding it dropped what the schema refuses.
		var raw struct{ Plan json.RawMessage }
		_ = json.Unmarshal(req.Input, &raw)
		if err := schemas.Validate(schemas.Plan, raw.Plan); err != nil {
			var ve *schemas.ValidationError
			if !errors.As(err, &ve) {
				return c, err
			}
			for i := range ve.Problems {
				ve.Problems[i].Pointer = "/plan" + ve.Problems[i].Pointer
			}
			return c, err
		}
		c.Query = req.Query
	}
	if c.Query == "" && c.Plan == nil {
		return c, errors.New("/query: blank")
	}
	if in.Timeout != "" {
		d, err := time.ParseDuration(in.Timeout)
		if err != nil || d <= 0 || d > MaxTimeout {
			return c, fmt.Errorf("/timeout: %q: want a duration above 0 and at most %s", in.Timeout, MaxTimeout)
		}
		c.Timeout = d
	}
	return c, nil
}
