package search

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/subjects"
)

// Capability is the capability the search agent serves.
const Capability = "search"

// MaxK bounds how many hits one search may ask for.
const MaxK = 100

// ErrNoQuery is returned (as a permanent failure) when neither the step's
// input nor the workflow carries a query.
var ErrNoQuery = errors.New("search: no query")

// Config configures the search agent. Backend is required; the zero value
// of every other field means its default.
type Config struct {
	// Backend is the index searched; the agent does not close it.
	Backend retrieval.Backend
	// DefaultProfiles are searched when neither the input nor a
	// profile_selection step names profiles; default Backend.Profiles().
	// Without an ensemble only the first is searched.
	DefaultProfiles []string
	// K is how many hits to return when the input does not say; default 10.
	K int
	// MaxPerDoc caps the hits of one document among the K returned, so
	// that a long document's many chunks do not crowd out the others (a
	// comparison needs both sides); default 3, negative means no cap. The
	// input's max_per_doc wins.
	MaxPerDoc int
	// Weights weigh the profiles' lists in fusion; nil means
	// retrieval.DefaultProfileWeights() (vector lists at half weight), an
	// empty map weighs every list alike.
	Weights retrieval.ProfileWeights
	// Reranker reorders the fused hits; default retrieval.Deterministic{}.
	// An LLM reranker falls back to its own fallback and says so in the
	// output's "rerank".
	Reranker retrieval.Reranker
	// NoRerank keeps the fused order.
	NoRerank bool
	// SideHits is how many best hits of each side of a comparison are
	// reported in "sides" and kept among the hits; default 3.
	SideHits int
}

func (c *Config) setDefaults() {
	if len(c.DefaultProfiles) == 0 && c.Backend != nil {
		c.DefaultProfiles = c.Backend.Profiles()
	}
	if c.K == 0 {
		c.K = 10
	}
	if c.MaxPerDoc == 0 {
		c.MaxPerDoc = 3
	}
	if c.Weights == nil {
		c.Weights = retrieval.DefaultProfileWeights()
	}
	if c.Reranker == nil && !c.NoRerank {
		c.Reranker = retrieval.Deterministic{}
	}
	if c.SideHits == 0 {
		c.SideHits = 3
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Backend == nil {
		errs = append(errs, errors.New("search: config needs a Backend"))
	} else if len(c.DefaultProfiles) == 0 {
		errs = append(errs, fmt.Errorf("search: backend %s offers no profiles", c.Backend.Name()))
	}
	if c.K < 0 || c.K > MaxK {
		errs = append(errs, fmt.Errorf("search: K %d not in [1, %d]", c.K, MaxK))
	}
	if c.SideHits < 1 {
		errs = append(errs, fmt.Errorf("search: SideHits %d: want at least 1", c.SideHits))
	}
	for p, w := range c.Weights {
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			errs = append(errs, fmt.Errorf("search: weight %v of profile %q: want a finite weight ≥ 0", w, p))
		}
	}
	return errors.Join(errs...)
}

// Agent is the search agent. It is safe for concurrent use.
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

// Card describes the search agent.
func (a *Agent) Card() agents.Card {
	return agents.Card{
		Name: "search", Version: "1.0.0", Capabilities: []string{Capability},
		Description: "Searches the tenant's indexed documents (BM25 full text, vector similarity) and fuses " +
			"several profiles and query variants with Reciprocal Rank Fusion.",
		Examples: []string{"find documents about JetStream consumers", "search the docs for retry policy",
			"which documents mention RRF fusion"},
	}
}

// Input is the search step's input.
type Input struct {
	Query string `json:"query,omitempty"`
	// Ensemble, when set, decides whether several profiles are fused;
	// unset, profile_selection decides, and without it one profile runs.
	Ensemble *bool    `json:"ensemble,omitempty"`
	Profiles []string `json:"profiles,omitempty"`
	K        int      `json:"k,omitempty"`
	Filters  *Filters `json:"filters,omitempty"`
	// MaxPerDoc caps one document's hits (see Config.MaxPerDoc).
	MaxPerDoc int `json:"max_per_doc,omitempty"`
}

// Filters is the JSON form of retrieval.Filters: RFC 3339 bounds.
type Filters struct {
	From     *time.Time        `json:"from,omitempty"`
	To       *time.Time        `json:"to,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

func (f *Filters) retrieval() retrieval.Filters {
	var out retrieval.Filters
	if f == nil {
		return out
	}
	if f.From != nil {
		out.From = *f.From
	}
	if f.To != nil {
		out.To = *f.To
	}
	out.Metadata = f.Metadata
	return out
}

// Output is what the search agent returns. Query is the query as given;
// Search is the text searched after query understanding (framing words
// such as "compare" or "in detail" removed).
type Output struct {
	Query       string          `json:"query"`
	Search      string          `json:"search,omitempty"`
	Intent      string          `json:"intent,omitempty"`
	Identifiers []string        `json:"identifiers,omitempty"`
	Hits        []retrieval.Hit `json:"hits"`
	// Sides are a comparison's sides, each with its best hits (chunk ids,
	// best first), every one of which is also in Hits.
	Sides []Side `json:"sides,omitempty"`
	// Rerank says which reranker ordered Hits and why it fell back, if
	// it did; absent when reranking is off.
	Rerank         *retrieval.Reranked `json:"rerank,omitempty"`
	ProfilesUsed   []string            `json:"profiles_used"`
	ProfilesFailed []Failure           `json:"profiles_failed"`
	Ensemble       bool                `json:"ensemble"`
	Variants       []string            `json:"variants,omitempty"`
	FiltersApplied *Filters            `json:"filters_applied,omitempty"`
	Lists          []ListRun           `json:"lists"`
	Backend        string              `json:"backend"`
	TookMS         int64               `json:"took_ms"`
}

// Side is one side of a comparison: its search text and its best hits.
type Side struct {
	Name string   `json:"name"`
	Hits []string `json:"hits"`
}

// Failure is a profile (or one of its ranked lists) that failed.
type Failure struct {
	Profile string `json:"profile"`
	List    string `json:"list,omitempty"`
	Error   string `json:"error"`
}

// Handle searches the tenant's index.
func (a *Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	start := time.Now()
	if err := subjects.ValidTenant(req.TenantID); err != nil {
		return nil, fmt.Errorf("%w: search: %w", agents.ErrPermanent, err)
	}
	var in Input
	if err := agentkit.Decode(req, agentkit.InputSchema(Capability), &in); err != nil {
		return nil, err
	}
	p := a.plan(req, in)
	if p.query == "" {
		return nil, fmt.Errorf("%w: %w: the step input and the workflow have none", agents.ErrPermanent, ErrNoQuery)
	}
	lists := p.lists()
	_ = emit.Progress(ctx, 10, fmt.Sprintf("searching %d profiles (%d ranked lists, %s)",
		len(p.profiles), len(lists), a.cfg.Backend.Name()))
	res, runs, err := a.run(ctx, req.TenantID, p, lists, cmp.Or(in.MaxPerDoc, a.cfg.MaxPerDoc))
	hits := res.hits
	out := Output{
		Query: p.query, Search: p.u.Search, Intent: p.u.Intent, Identifiers: p.u.Identifiers,
		Ensemble: p.ensemble, Variants: p.variants, Backend: a.cfg.Backend.Name(),
		Hits: hits, Sides: res.sides, Rerank: res.rerank, Lists: runs, ProfilesUsed: []string{}, ProfilesFailed: []Failure{},
	}
	if !p.filtersEmpty() {
		out.FiltersApplied = p.filters
	}
	out.ProfilesUsed, out.ProfilesFailed = summarize(p.profiles, runs)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if allUnknown(runs) {
			return nil, fmt.Errorf("%w: %w", agents.ErrPermanent, err)
		}
		return nil, err
	}
	for _, f := range out.ProfilesFailed {
		_ = emit.Progress(ctx, 60, fmt.Sprintf("profile %s failed, continuing without it: %s", f.Profile, f.Error))
	}
	if r := res.rerank; r != nil && r.Fallback != "" {
		_ = emit.Progress(ctx, 80, fmt.Sprintf("reranker %s fell back to %s: %s", a.cfg.Reranker.Name(), r.By, r.Fallback))
	}
	_ = emit.Progress(ctx, 90, fmt.Sprintf("fused %d hits", len(hits)))
	out.TookMS = time.Since(start).Milliseconds()
	return agentkit.Encode(agentkit.OutputSchema(Capability), out)
}
