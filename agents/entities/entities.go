package entities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/retrieval"
)

// Capability is the capability the entity extraction agent serves.
const Capability = "entity_extraction"

// Schema names of the agent's input and output.
var (
	InputSchema  = agentkit.InputSchema(Capability)
	OutputSchema = agentkit.OutputSchema(Capability)
)

// ErrNoQuery is wrapped (with agents.ErrPermanent) when neither the input
// nor the workflow carries a query.
var ErrNoQuery = errors.New("entities: no query")

// Input is the step input: {"query": "...", "now": "<RFC 3339>"}, both
// optional. Without a query the workflow's query is used; without now,
// Config.Now.
type Input struct {
	Query string    `json:"query,omitempty"`
	Now   time.Time `json:"now,omitzero"`
}

// Entity is one named thing found in the query. Start and End are byte
// offsets: Query[Start:End] == Text.
type Entity struct {
	Text       string  `json:"text"`
	Type       string  `json:"type"`
	Confidence float64 `json:"confidence"`
	// Context is the entity with up to three words either side.
	Context string `json:"context"`
	Start   int    `json:"start"`
	End     int    `json:"end"`
}

// TimeRange is one temporal expression resolved against the reference
// time: From and To are inclusive bounds (To is the last second of the
// period; "since …" and "past …" end at the end of today).
type TimeRange struct {
	Text  string    `json:"text"`
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	Grain string    `json:"grain"`
}

// Output is the agent's answer; see the package documentation for the
// contract the search agent relies on.
type Output struct {
	Query          string `json:"query"`
	Method         string `json:"method"`
	FallbackReason string `json:"fallback_reason,omitempty"`
	// ReferenceTime is the "now" relative expressions were resolved
	// against.
	ReferenceTime time.Time   `json:"reference_time"`
	Entities      []Entity    `json:"entities"`
	DominantTypes []string    `json:"dominant_types"`
	TimeRanges    []TimeRange `json:"time_ranges"`
	// Filters spans every time range (earliest From to latest To); nil
	// when there is none.
	Filters *retrieval.Filters `json:"filters,omitempty"`
}

// Config configures an Agent; the zero value is the offline heuristic.
type Config struct {
	// LLM, when set, is asked first; its answer is used only if it passes
	// the output schema and the sanity checks.
	LLM agentkit.Completer
	// Now gives the reference time for relative dates; default time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem with the configuration (there are none
// once defaults are set; it exists so that every agent's Config reads the
// same).
func (c Config) Validate() error {
	if c.Now == nil {
		return errors.New("entities: config needs Now")
	}
	return nil
}

// Agent extracts entities and time ranges from a query. It is safe for
// concurrent use.
type Agent struct {
	cfg Config
}

var _ agents.Agent = (*Agent)(nil)

// New makes an Agent from cfg.
func New(cfg Config) (*Agent, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Agent{cfg: cfg}, nil
}

// Card describes the agent.
func (a *Agent) Card() agents.Card {
	return agents.Card{
		Name: "entities", Version: "1.0.0", Capabilities: []string{Capability},
		Description: "Extracts named entities (people, places, organisations, products, concepts, dates, numbers) " +
			"and resolves time expressions such as \"last week\" or \"Q1 2024\" into date ranges usable as search filters.",
		Examples: []string{
			"news about OpenAI in San Francisco last week",
			"what did the European Union decide between March and May 2024",
			"Kubernetes 1.30 release notes since January",
		},
	}
}

// Handle extracts the entities of the step's query.
func (a *Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	var in Input
	if err := agentkit.Decode(req, InputSchema, &in); err != nil {
		return nil, err
	}
	q, err := agentkit.NeedQuery(req, in.Query, ErrNoQuery)
	if err != nil {
		return nil, err
	}
	now := in.Now
	if now.IsZero() {
		now = a.cfg.Now()
	}
	agentkit.Progress(ctx, emit, 20, "extracting entities")
	out, reason, err := agentkit.LLMFirst(ctx, emit, a.cfg.LLM, systemPrompt(now), q,
		func(answer string) (Output, error) { return parseLLM(q, now, answer) },
		func() Output { return Extract(q, now) })
	if err != nil {
		return nil, err
	}
	out.FallbackReason = reason
	agentkit.Progress(ctx, emit, 100, fmt.Sprintf("found %d entities and %d time ranges (%s)", len(out.Entities), len(out.TimeRanges), out.Method))
	return agentkit.Encode(OutputSchema, out)
}

// Extract runs the heuristic on query, resolving relative dates against
// now. It is deterministic and safe for concurrent use.
func Extract(query string, now time.Time) Output {
	dates, invalid := findTimeRanges(query, now)
	out := Output{Query: query, Method: agentkit.MethodHeuristic, ReferenceTime: now, Entities: extract(query, dates, invalid)}
	out.TimeRanges = make([]TimeRange, len(dates))
	for i, d := range dates {
		out.TimeRanges[i] = d.r
	}
	finish(&out)
	return out
}

// finish derives the fields that follow from entities and time ranges.
func finish(out *Output) {
	if out.Entities == nil {
		out.Entities = []Entity{}
	}
	if out.TimeRanges == nil {
		out.TimeRanges = []TimeRange{}
	}
	out.DominantTypes = dominantTypes(out.Entities)
	out.Filters = nil
	for _, r := range out.TimeRanges {
		if out.Filters == nil {
			out.Filters = &retrieval.Filters{From: r.From, To: r.To}
			continue
		}
		if r.From.Before(out.Filters.From) {
			out.Filters.From = r.From
		}
		if r.To.After(out.Filters.To) {
			out.Filters.To = r.To
		}
	}
}
