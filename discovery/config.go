package discovery

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/llm/vector"
)

// Config configures a Registry. The zero value of every field but Bus means
// its default.
type Config struct {
	Bus *bus.Bus
	// Embedder embeds queries, and the cards of agents registered with
	// another embedder (once each: the vectors are cached by text); default
	// vector.LocalEmbedder. Readers should use the embedder the workers were
	// started with (--embed-url), so that stored vectors are used as they
	// are.
	Embedder vector.Embedder
	// Margin is how close two similarity scores must be for health and
	// load to decide between them (see Match.Rank); default DefaultMargin.
	// Negative turns the preference off: matches rank by similarity alone.
	Margin float64
	// Logger reports the index's watch ending and starting again; default
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock health is judged by; default time.Now.
	Now func() time.Time
}

// DefaultMargin is Config.Margin's default: a cosine similarity difference
// that the local hashing embedder and OpenAI-style embedders alike treat as
// noise between two agents that both fit a query.
const DefaultMargin = 0.05

// DefaultK is how many matches Discover returns when asked for none.
const DefaultK = 5

func (c *Config) setDefaults() {
	if c.Embedder == nil {
		c.Embedder = vector.LocalEmbedder{}
	}
	if c.Margin == 0 {
		c.Margin = DefaultMargin
	}
	if c.Margin < 0 {
		c.Margin = 0
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Bus == nil {
		errs = append(errs, errors.New("discovery: config needs Bus"))
	}
	if c.Margin > 1 {
		errs = append(errs, fmt.Errorf("discovery: margin %g above 1, the whole range of a similarity score", c.Margin))
	}
	return errors.Join(errs...)
}
