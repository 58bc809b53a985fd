package enhance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
)

// Capability is the capability the query enhancement agent serves.
const Capability = "query_enhancement"

// Schema names of the agent's input and output.
var (
	InputSchema  = agentkit.InputSchema(Capability)
	OutputSchema = agentkit.OutputSchema(Capability)
)

// ErrNoQuery is wrapped (with agents.ErrPermanent) when neither the input
// nor the workflow carries a query.
var ErrNoQuery = errors.New("enhance: no query")

// Input is the step input; every field is optional. Without a query the
// workflow's query is used.
type Input struct {
	Query string `json:"query,omitempty"`
	// MaxVariants caps the variants, the original included; default and
	// most MaxVariants.
	MaxVariants int `json:"max_variants,omitempty"`
}

// Output is the agent's answer; see the package documentation.
type Output struct {
	Query          string `json:"query"`
	Method         string `json:"method"`
	FallbackReason string `json:"fallback_reason,omitempty"`
	// Keywords are the query's content terms, stop words dropped.
	Keywords []string `json:"keywords"`
	// Expansions are extra terms not in the query: synonyms and related
	// terms of its keywords.
	Expansions []string `json:"expansions"`
	// Synonyms maps each keyword that has any to its synonyms, preferred
	// form first.
	Synonyms map[string][]string `json:"synonyms"`
	// Variants are rephrasings to search in parallel and fuse; the
	// original query is always first; no two are equal ignoring case.
	Variants []string `json:"variants"`
}

// Config configures an Agent; the zero value is the offline heuristic.
type Config struct {
	// LLM, when set, is asked first; its answer is used only if it passes
	// the output schema.
	LLM agentkit.Completer
}

// Agent rewrites and expands queries. It is safe for concurrent use.
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
		Name: "enhance", Version: "1.0.0", Capabilities: []string{Capability},
		Description: "Rewrites a search query: keywords, synonyms and expansion terms from a thesaurus, and " +
			"up to five rephrasings (keyword, synonym, statement and entity-focused forms) to search in parallel and fuse.",
		Examples: []string{
			"expand the query: how do I speed up postgres queries",
			"rephrase \"k8s pod keeps restarting\" for search",
			"synonyms for cheap flights to Tokyo",
		},
	}
}

// Handle enhances the step's query.
func (a *Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	var in Input
	if err := agentkit.Decode(req, InputSchema, &in); err != nil {
		return nil, err
	}
	q, err := agentkit.NeedQuery(req, in.Query, ErrNoQuery)
	if err != nil {
		return nil, err
	}
	agentkit.Progress(ctx, emit, 20, "enhancing query")
	out, reason, err := agentkit.LLMFirst(ctx, emit, a.cfg.LLM, systemPrompt(), q,
		func(answer string) (Output, error) { return parseLLM(q, in.MaxVariants, answer) },
		func() Output { return Enhance(q, in.MaxVariants) })
	if err != nil {
		return nil, err
	}
	out.FallbackReason = reason
	agentkit.Progress(ctx, emit, 100, fmt.Sprintf("%d variants, %d expansion terms (%s)", len(out.Variants), len(out.Expansions), out.Method))
	return agentkit.Encode(OutputSchema, out)
}

func systemPrompt() string {
	return "You improve search queries for a retrieval system.\n" +
		"keywords: the query's content words; synonyms: for each keyword that has them; expansions: extra search terms not in the query; " +
		"variants: 2 to 5 rephrasings to search in parallel, the original query first, then a keyword form, a synonym form, " +
		"a statement form of a question and an entity-focused form.\n" +
		agentkit.SchemaPrompt(OutputSchema, "method", "query")
}

// parseLLM turns the model's answer into an Output, or says why it cannot.
// The original query is put first among the variants if the model left it
// out, repeats are dropped and the list is cut to max.
func parseLLM(query string, max int, answer string) (Output, error) {
	var out Output
	if err := agentkit.ParseLLM(answer, agentkit.Answer{Agent: "enhance", Schema: OutputSchema, Query: query}, &out); err != nil {
		return Output{}, err
	}
	if max <= 0 || max > MaxVariants {
		max = MaxVariants
	}
	out.Query = strings.Join(strings.Fields(query), " ")
	out.Variants = dedupe(append([]string{out.Query}, out.Variants...))
	if len(out.Variants) > max {
		out.Variants = out.Variants[:max]
	}
	if len(out.Variants) < 2 && max >= 2 {
		return Output{}, errors.New("enhance: answer has no variant besides the original query")
	}
	out.Keywords = dedupe(out.Keywords)
	out.Expansions = dedupe(out.Expansions)
	if out.Keywords == nil {
		out.Keywords = []string{}
	}
	if out.Expansions == nil {
		out.Expansions = []string{}
	}
	return out, nil
}
