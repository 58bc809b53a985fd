package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/llm"
)

// Capability is the capability the routing agent serves.
const Capability = "routing"

// Schema names of the agent's input and output.
var (
	InputSchema  = agentkit.InputSchema(Capability)
	OutputSchema = agentkit.OutputSchema(Capability)
)

// ErrNoQuery is wrapped (with agents.ErrPermanent) when neither the input
// nor the workflow carries a query.
var ErrNoQuery = errors.New("routing: no query")

// Input is the step input; every field is optional.
type Input struct {
	// Query defaults to the workflow's query.
	Query string `json:"query,omitempty"`
	// Capabilities are the capabilities to choose from; default
	// DefaultCapabilities.
	Capabilities []string `json:"capabilities,omitempty"`
	// Descriptions describe capabilities that Builtin does not (or
	// describe them better), for the similarity match.
	Descriptions map[string]string `json:"descriptions,omitempty"`
}

// Recommendation is one capability routing proposes.
type Recommendation struct {
	Capability string  `json:"capability"`
	Confidence float64 `json:"confidence"`
	Reason     string  `json:"reason"`
}

// Output is the agent's answer; see the package documentation.
type Output struct {
	Query          string `json:"query"`
	Method         string `json:"method"`
	FallbackReason string `json:"fallback_reason,omitempty"`
	// RecommendedAgents are best first, never empty.
	RecommendedAgents []Recommendation `json:"recommended_agents"`
	// Confidence is the first recommendation's.
	Confidence float64 `json:"confidence"`
	Reasoning  string  `json:"reasoning"`
	// Fallbacks are capabilities to try when the recommended ones fail.
	Fallbacks []string `json:"fallbacks"`
	// Embedder names the embedder of the similarity match (heuristic).
	Embedder string `json:"embedder,omitempty"`
}

// Config configures an Agent; the zero value is the offline heuristic with
// the local embedder.
type Config struct {
	// LLM, when set, is asked first; its answer is used only if it passes
	// the output schema and names only available capabilities.
	LLM agentkit.Completer
	// Embedder embeds the query and capability descriptions; default
	// llm.LocalEmbedder.
	Embedder llm.Embedder
}

func (c *Config) setDefaults() {
	if c.Embedder == nil {
		c.Embedder = llm.LocalEmbedder{}
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	if c.Embedder == nil {
		return errors.New("routing: config needs an Embedder")
	}
	return nil
}

// Agent routes a query to capabilities. It is safe for concurrent use.
type Agent struct {
	cfg    Config
	router *router
}

var _ agents.Agent = (*Agent)(nil)

// New makes an Agent from cfg.
func New(cfg Config) (*Agent, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Agent{cfg: cfg, router: &router{embedder: cfg.Embedder, cache: map[string][]float32{}}}, nil
}

// Card describes the agent.
func (a *Agent) Card() agents.Card {
	return agents.Card{
		Name: "routing", Version: "1.0.0", Capabilities: []string{Capability},
		Description: "Recommends which agents (capabilities) should handle a query, with confidence, reasons " +
			"and fallbacks, from keyword rules and similarity to the agents' descriptions.",
		Examples: []string{
			"which agent should answer: summarize last week's incident reports",
			"route this request: compare raft and paxos in depth",
			"who handles: what did we discuss last time",
		},
	}
}

// Route runs the heuristic for query over the available capabilities
// (default DefaultCapabilities). It is safe for concurrent use.
func (a *Agent) Route(ctx context.Context, query string, available []string, descriptions map[string]string) Output {
	if len(available) == 0 {
		available = DefaultCapabilities
	}
	return a.router.route(ctx, query, available, descriptions)
}

// Handle routes the step's query.
func (a *Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	var in Input
	if err := agentkit.Decode(req, InputSchema, &in); err != nil {
		return nil, err
	}
	q, err := agentkit.NeedQuery(req, in.Query, ErrNoQuery)
	if err != nil {
		return nil, err
	}
	available := in.Capabilities
	if len(available) == 0 {
		available = DefaultCapabilities
	}
	agentkit.Progress(ctx, emit, 20, fmt.Sprintf("routing among %d capabilities", len(available)))
	out, reason, err := agentkit.LLMFirst(ctx, emit, a.cfg.LLM, systemPrompt(), userPrompt(q, available, in.Descriptions),
		func(answer string) (Output, error) { return parseLLM(q, available, answer) },
		func() Output { return a.Route(ctx, q, available, in.Descriptions) })
	if err != nil {
		return nil, err
	}
	out.FallbackReason = reason
	agentkit.Progress(ctx, emit, 100, fmt.Sprintf("recommended %s (%.2f, %s)", out.RecommendedAgents[0].Capability, out.Confidence, out.Method))
	return agentkit.Encode(OutputSchema, out)
}

func systemPrompt() string {
	return "You route a user's query to the agents (capabilities) that should handle it. Recommend one to three of the " +
		"available capabilities, best first, each with a confidence in [0, 1] and a short reason; give the overall confidence, " +
		"your reasoning, and fallbacks (other available capabilities to try if those fail).\n" +
		agentkit.SchemaPrompt(OutputSchema, "method", "query")
}

func userPrompt(q string, available []string, descriptions map[string]string) string {
	caps := map[string]string{}
	for _, c := range available {
		caps[c] = describe(c, descriptions)
	}
	b, _ := json.Marshal(map[string]any{"query": q, "available_capabilities": caps})
	return string(b)
}

// parseLLM turns the model's answer into an Output, or says why it cannot:
// it must satisfy the output schema and name only available capabilities.
func parseLLM(query string, available []string, answer string) (Output, error) {
	var out Output
	if err := agentkit.ParseLLM(answer, agentkit.Answer{Agent: "routing", Schema: OutputSchema, Query: query, Set: map[string]any{"embedder": nil}}, &out); err != nil {
		return Output{}, err
	}
	for i, r := range out.RecommendedAgents {
		if !slices.Contains(available, r.Capability) {
			return Output{}, fmt.Errorf("routing: answer's /recommended_agents/%d names %q, which is not available", i, r.Capability)
		}
	}
	for i, f := range out.Fallbacks {
		if !slices.Contains(available, f) {
			return Output{}, fmt.Errorf("routing: answer's /fallbacks/%d names %q, which is not available", i, f)
		}
	}
	return out, nil
}
