package toolagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/permissions"
)

// Capability is the tool-calling agent's capability.
const Capability = "agent"

// Model is the chat model the loop asks: *llm.Chat.
type Model interface {
	Converse(ctx context.Context, messages []llm.Message, tools []llm.Tool) (llm.Turn, error)
	Name() string
}

// Lister lists the registered agents whose capabilities become tools:
// *discovery.Registry.
type Lister interface {
	List(ctx context.Context) ([]discovery.Instance, error)
}

var (
	_ Model  = (*llm.Chat)(nil)
	_ Lister = (*discovery.Registry)(nil)
)

// Config configures an Agent. Bus, Model and Tools are required; the zero
// value of every other field means its default.
type Config struct {
	// Bus is where tool calls are submitted as child workflows and
	// followed.
	Bus *bus.Bus
	// Model is asked, turn by turn, for tool calls or the final answer.
	Model Model
	// Tools lists the registered agents; their capabilities with an input
	// schema are the tools.
	Tools Lister
	// Permissions, when set, leaves out the tools the tenant and role of
	// the step may not run (the orchestrator would refuse their child
	// workflows anyway).
	Permissions permissions.Table
	// MaxIterations bounds the model calls of one step; default 8.
	MaxIterations int
	// MaxTokens bounds the model tokens one step spends, prompt and
	// completion; default 50000.
	MaxTokens int64
	// MaxTime bounds one step, tool calls included; default 5m.
	MaxTime time.Duration
	// MaxResult bounds the bytes of a tool result given to the model;
	// default 8000.
	MaxResult int
	Logger    *slog.Logger
}

func (c *Config) setDefaults() {
	if c.MaxIterations == 0 {
		c.MaxIterations = 8
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = 50000
	}
	if c.MaxTime == 0 {
		c.MaxTime = 5 * time.Minute
	}
	if c.MaxResult == 0 {
		c.MaxResult = 8000
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Bus == nil {
		errs = append(errs, errors.New("toolagent: config needs Bus"))
	}
	if c.Model == nil {
		errs = append(errs, errors.New("toolagent: config needs Model (the agent is not served without a model)"))
	}
	if c.Tools == nil {
		errs = append(errs, errors.New("toolagent: config needs Tools"))
	}
	if c.MaxIterations < 1 || c.MaxTokens < 1 || c.MaxTime <= 0 || c.MaxResult < 100 {
		errs = append(errs, fmt.Errorf("toolagent: bounds %d iterations, %d tokens, %s, %d result bytes: want at least 1, 1, >0, 100",
			c.MaxIterations, c.MaxTokens, c.MaxTime, c.MaxResult))
	}
	if err := c.Permissions.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("toolagent: %w", err))
	}
	return errors.Join(errs...)
}
