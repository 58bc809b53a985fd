package profiles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/retrieval"
)

// Capability is the capability the profile selection agent serves.
const Capability = "profile_selection"

// Schema names of the agent's input and output.
var (
	InputSchema  = agentkit.InputSchema(Capability)
	OutputSchema = agentkit.OutputSchema(Capability)
)

// DefaultProfiles are the profiles assumed when the input names none.
var DefaultProfiles = []string{retrieval.ProfileBM25, retrieval.ProfileVector}

// Complexity levels.
const (
	LevelSimple  = "simple"
	LevelComplex = "complex"
)

// ErrNoQuery is wrapped (with agents.ErrPermanent) when neither the input
// nor the workflow carries a query.
var ErrNoQuery = errors.New("profiles: no query")

// Input is the step input; every field is optional.
type Input struct {
	// Query defaults to the workflow's query.
	Query string `json:"query,omitempty"`
	// Profiles are the profiles the search backend offers; default
	// DefaultProfiles. Only these are ever selected.
	Profiles []string `json:"profiles,omitempty"`
	// Ensemble asks for an ensemble whatever the query.
	Ensemble bool `json:"ensemble,omitempty"`
}

// Choice is one profile with the confidence that it suits the query.
type Choice struct {
	Name       string  `json:"name"`
	Confidence float64 `json:"confidence"`
}

// Complexity grades the query; Level is "complex" exactly when Score is
// at least 0.5, and Reasons says which rules made it so.
type Complexity struct {
	Level   string   `json:"level"`
	Score   float64  `json:"score"`
	Reasons []string `json:"reasons"`
}

// Signals are the evidence, each in [0, 1], for lexical (exact terms) and
// semantic (meaning) retrieval.
type Signals struct {
	Lexical  float64 `json:"lexical"`
	Semantic float64 `json:"semantic"`
}

// Output is the agent's answer; see the package documentation.
type Output struct {
	Query          string     `json:"query"`
	Method         string     `json:"method"`
	FallbackReason string     `json:"fallback_reason,omitempty"`
	Intent         string     `json:"intent"`
	Modality       string     `json:"modality"`
	Complexity     Complexity `json:"complexity"`
	Signals        Signals    `json:"signals"`
	// Selected are the profiles to search, best first; never empty.
	Selected []Choice `json:"selected"`
	// Alternatives are the other available profiles, best first.
	Alternatives []Choice `json:"alternatives"`
	// Ensemble: search every selected profile in parallel and fuse (RRF).
	Ensemble  bool   `json:"ensemble"`
	Reasoning string `json:"reasoning"`
}

// Config configures an Agent; the zero value is the offline heuristic.
type Config struct {
	// LLM, when set, is asked first; its answer is used only if it passes
	// the output schema and names only available profiles.
	LLM agentkit.Completer
}

// Agent chooses search profiles. It is safe for concurrent use.
type Agent struct {
	cfg Config
}

var _ agents.Agent = (*Agent)(nil)

// New makes an Agent from cfg; every Config is valid (the error is there
// so that every built-in agent is made the same way).
func New(cfg Config) (*Agent, error) {
	return &Agent{cfg: cfg}, nil
}

// Card describes the agent.
func (a *Agent) Card() agents.Card {
	return agents.Card{
		Name: "profiles", Version: "1.0.0", Capabilities: []string{Capability},
		Description: "Classifies a query's intent, modality and complexity and chooses the search profiles " +
			"(lexical BM25, vector, …) that suit it, and whether to run them as a fused ensemble.",
		Examples: []string{
			"which search profile for \"connection refused\" in redis",
			"choose retrieval strategy: how does raft elect a leader and why is it safe",
			"should I use keyword or semantic search for error E1234",
		},
	}
}

// Handle selects profiles for the step's query.
func (a *Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	var in Input
	if err := agentkit.Decode(req, InputSchema, &in); err != nil {
		return nil, err
	}
	q, err := agentkit.NeedQuery(req, in.Query, ErrNoQuery)
	if err != nil {
		return nil, err
	}
	available := in.Profiles
	if len(available) == 0 {
		available = DefaultProfiles
	}
	agentkit.Progress(ctx, emit, 20, "selecting search profiles among "+strings.Join(available, ", "))
	out, reason, err := agentkit.LLMFirst(ctx, emit, a.cfg.LLM, systemPrompt(), userPrompt(q, available, in.Ensemble),
		func(answer string) (Output, error) { return parseLLM(q, available, in.Ensemble, answer) },
		func() Output { return Select(q, available, in.Ensemble) })
	if err != nil {
		return nil, err
	}
	out.FallbackReason = reason
	agentkit.Progress(ctx, emit, 100, fmt.Sprintf("selected %s (ensemble %t, %s)", names(out.Selected), out.Ensemble, out.Method))
	return agentkit.Encode(OutputSchema, out)
}

func names(cs []Choice) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return strings.Join(out, ", ")
}

func systemPrompt() string {
	return "You choose retrieval profiles for a search query. Lexical profiles (bm25) match exact terms, codes, " +
		"quoted phrases and names; vector profiles match meaning. Classify the intent (informational, navigational, " +
		"comparison, how-to, troubleshooting, summary, definition, recommendation), the modality (text, code, data, image) " +
		"and the complexity, select profiles only from those available, put the others in alternatives, and set ensemble " +
		"when several profiles should be searched and fused.\n" +
		agentkit.SchemaPrompt(OutputSchema, "method", "query")
}

func userPrompt(q string, available []string, ensemble bool) string {
	b, _ := json.Marshal(map[string]any{"query": q, "available_profiles": available, "ensemble_requested": ensemble})
	return string(b)
}

// parseLLM turns the model's answer into an Output, or says why it cannot:
// it must satisfy the output schema, select at least one profile and name
// only available profiles, each once. A requested ensemble is kept.
func parseLLM(query string, available []string, ensemble bool, answer string) (Output, error) {
	var out Output
	if err := agentkit.ParseLLM(answer, agentkit.Answer{Agent: "profiles", Schema: OutputSchema, Query: query}, &out); err != nil {
		return Output{}, err
	}
	seen := map[string]bool{}
	for i, c := range append(slices.Clone(out.Selected), out.Alternatives...) {
		if !slices.Contains(available, c.Name) {
			return Output{}, fmt.Errorf("profiles: answer names profile %q (choice %d), which is not available", c.Name, i)
		}
		if seen[c.Name] {
			return Output{}, fmt.Errorf("profiles: answer names profile %q twice", c.Name)
		}
		seen[c.Name] = true
	}
	if ensemble && len(available) >= 2 {
		out.Ensemble = true
		if len(out.Selected) < 2 && len(out.Alternatives) > 0 {
			out.Selected, out.Alternatives = append(out.Selected, out.Alternatives[0]), out.Alternatives[1:]
		}
	}
	if out.Complexity.Reasons == nil {
		out.Complexity.Reasons = []string{}
	}
	return out, nil
}
