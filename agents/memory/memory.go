package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/subjects"
)

// Capability is the capability the memory agent serves.
const Capability = "memory"

// Modes of a memory step.
const (
	ModeAuto     = "auto"
	ModeRemember = "remember"
	ModeRecall   = "recall"
)

// Config configures the memory agent. KV is required; the zero value of
// every other field means its default.
type Config struct {
	// KV is the memory bucket (subjects.BucketMemory).
	KV *bus.KV
	// Embedder, when set, adds embedding similarity to recall's ranking.
	Embedder llm.Embedder
	// RecallLimit is how many facts recall returns at most; a tenant with
	// no more facts than this gets all of them. Default 5.
	RecallLimit int
	// Now stamps stored facts; default time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.RecallLimit == 0 {
		c.RecallLimit = 5
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.KV == nil {
		errs = append(errs, errors.New("memory: config needs the memory bucket (KV)"))
	}
	if c.RecallLimit < 0 || c.RecallLimit > 100 {
		errs = append(errs, fmt.Errorf("memory: RecallLimit %d not in [1, 100]", c.RecallLimit))
	}
	return errors.Join(errs...)
}

// Agent is the memory agent. It is safe for concurrent use.
type Agent struct {
	cfg Config
}

var _ agents.Agent = (*Agent)(nil)

// New checks cfg and makes the agent.
func New(cfg Config) (*Agent, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Agent{cfg: cfg}, nil
}

// Card describes the memory agent.
func (a *Agent) Card() agents.Card {
	return agents.Card{
		Name: "memory", Version: "1.0.0", Capabilities: []string{Capability},
		Description: "Remembers what users tell about themselves (name, job, tools, preferences, notes) per user " +
			"and recalls the facts relevant to a query, so answers can be personalised.",
		Examples: []string{"remember that I work with Go", "my name is Ada and I live in Berlin",
			"what do you remember about me"},
	}
}

// Input is the memory step's input.
type Input struct {
	Query string `json:"query,omitempty"`
	Mode  string `json:"mode,omitempty"`
}

// Output is what the memory agent returns.
type Output struct {
	// Stored are the facts stored by this step, Known those of its facts
	// that were stored before.
	Stored []Fact `json:"stored"`
	Known  []Fact `json:"known,omitempty"`
	// Recalled are the tenant's facts relevant to the query, best first.
	Recalled []Fact `json:"recalled"`
	Method   string `json:"method"`
	// Ranking says how recall ordered and chose: "lexical" or
	// "lexical+<embedder>", prefixed "all, " when every fact was returned,
	// or "newest" (an explicit recall matching nothing in particular).
	Ranking string `json:"ranking,omitempty"`
	Mode    string `json:"mode"`
	Total   int    `json:"total_facts"`
	Query   string `json:"query"`
	TookMS  int64  `json:"took_ms"`
}

// Handle remembers and recalls for the requesting user (req.User, set
// from the gateway's token), or for the tenant as a whole when the
// request names no user.
func (a *Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	start := time.Now()
	prefix, err := subjects.MemoryPrefix(req.TenantID, req.User)
	if err != nil {
		return nil, fmt.Errorf("%w: memory: %w", agents.ErrPermanent, err)
	}
	var in Input
	if err := agentkit.Decode(req, agentkit.InputSchema(Capability), &in); err != nil {
		return nil, err
	}
	if in.Mode == "" {
		in.Mode = ModeAuto
	}
	query := agentkit.QueryOf(req, in.Query)
	out := Output{Stored: []Fact{}, Recalled: []Fact{}, Method: agentkit.MethodHeuristic, Mode: in.Mode, Query: query}
	fresh := map[string]bool{}
	if in.Mode != ModeRecall {
		for _, f := range Extract(query) {
			stored, err := a.store(ctx, prefix, &f)
			if err != nil {
				return nil, err
			}
			if stored {
				out.Stored = append(out.Stored, f)
				fresh[f.Key] = true
			} else {
				out.Known = append(out.Known, f)
			}
		}
		if len(out.Stored)+len(out.Known) > 0 {
			_ = emit.Progress(ctx, 40, fmt.Sprintf("remembered %d new facts (%d already known)", len(out.Stored), len(out.Known)))
		}
	}
	if in.Mode != ModeRemember {
		all, err := a.facts(ctx, prefix)
		if err != nil {
			return nil, err
		}
		out.Total = len(all)
		var rest []Fact
		for _, f := range all {
			if !fresh[f.Key] {
				rest = append(rest, f)
			}
		}
		out.Recalled, out.Ranking, err = a.recall(ctx, query, rest, in.Mode == ModeRecall)
		if err != nil {
			return nil, err
		}
		_ = emit.Progress(ctx, 90, fmt.Sprintf("recalled %d of %d facts (%s)", len(out.Recalled), len(all), out.Ranking))
	}
	out.TookMS = time.Since(start).Milliseconds()
	return agentkit.Encode(agentkit.OutputSchema(Capability), out)
}

// store writes f under prefix (the user's, or the tenant's for a request
// with no user) unless that fact is already there; it reports whether it
// wrote. f gets its key and time either way.
func (a *Agent) store(ctx context.Context, prefix string, f *Fact) (bool, error) {
	f.Key = prefix + f.Hash()
	f.StoredAt = a.cfg.Now().UTC().Format(time.RFC3339)
	b, err := json.Marshal(f)
	if err != nil {
		return false, fmt.Errorf("memory: encode fact: %w", err)
	}
	_, err = a.cfg.KV.Create(ctx, f.Key, b)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, bus.ErrConflict):
		if e, gerr := a.cfg.KV.Get(ctx, f.Key); gerr == nil {
			var old Fact
			if json.Unmarshal(e.Value, &old) == nil && old.StoredAt != "" {
				f.StoredAt = old.StoredAt
			}
		}
		return false, nil
	default:
		return false, fmt.Errorf("memory: store fact: %w", err)
	}
}

// facts lists the facts under prefix, and only those: a user's
// ("<tenant>.<user>.*": never another user's, nor the tenant-wide ones,
// which may hold what users said before they had tokens of their own), or
// the tenant-wide ones ("<tenant>.*", one token after the tenant: never a
// user's). A fact stored under a key that does not carry the prefix is
// never returned.
func (a *Agent) facts(ctx context.Context, prefix string) ([]Fact, error) {
	entries, err := a.cfg.KV.ListMatching(ctx, prefix+"*")
	if err != nil {
		return nil, fmt.Errorf("memory: list facts: %w", err)
	}
	out := make([]Fact, 0, len(entries))
	for _, e := range entries {
		var f Fact
		if !strings.HasPrefix(e.Key, prefix) || strings.Contains(e.Key[len(prefix):], ".") || json.Unmarshal(e.Value, &f) != nil {
			continue
		}
		f.Key = e.Key
		out = append(out, f)
	}
	return out, nil
}
