package compose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/querykind"
)

// Capabilities the composer serves.
const (
	CapabilitySummarize      = "summarize"
	CapabilityDetailedReport = "detailed_report"
)

// Method values of the output.
const (
	// MethodExtractive: sentences picked from the hits, each cited.
	MethodExtractive = "extractive"
	// MethodLLM: the configured model answered from numbered passages and
	// every citation checked out.
	MethodLLM = agentkit.MethodLLM
)

// ArtifactID is the id of the streamed answer artifact.
const ArtifactID = "answer"

// ErrCapability is returned for a step of a capability the composer does
// not serve.
var ErrCapability = errors.New("compose: unknown capability")

// Config configures the composer; its zero value is ready to use.
type Config struct {
	// LLM, when set, writes the answer; the extractive composer is the
	// fallback when it fails or cites what it was not given.
	LLM agentkit.Completer
	// SummarySentences is how many sentences a summary has; default 4.
	SummarySentences int
	// ReportSentences is how many sentences a report has; default 10.
	ReportSentences int
	// Passages is how many hits the LLM is shown; default 8.
	Passages int
	// StreamWindow is how long the tokens of a streamed LLM answer are
	// gathered into one artifact chunk; default 50ms. Negative: the LLM
	// is asked for one JSON answer, which is published when checked.
	StreamWindow time.Duration
}

func (c *Config) setDefaults() {
	if c.SummarySentences == 0 {
		c.SummarySentences = 4
	}
	if c.ReportSentences == 0 {
		c.ReportSentences = 10
	}
	if c.Passages == 0 {
		c.Passages = 8
	}
	if c.StreamWindow == 0 {
		c.StreamWindow = 50 * time.Millisecond
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.SummarySentences < 0 || c.SummarySentences > 20 {
		errs = append(errs, fmt.Errorf("compose: SummarySentences %d not in [1, 20]", c.SummarySentences))
	}
	if c.ReportSentences < 0 || c.ReportSentences > 50 {
		errs = append(errs, fmt.Errorf("compose: ReportSentences %d not in [1, 50]", c.ReportSentences))
	}
	if c.Passages < 0 || c.Passages > 50 {
		errs = append(errs, fmt.Errorf("compose: Passages %d not in [1, 50]", c.Passages))
	}
	return errors.Join(errs...)
}

// Agent composes answers. It is safe for concurrent use.
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

// Card describes the composer.
func (a *Agent) Card() agents.Card {
	return agents.Card{
		Name: "compose", Version: "1.0.0", Capabilities: []string{CapabilitySummarize, CapabilityDetailedReport},
		Description: "Answers a question from the search results with numbered citations [n] of the source " +
			"documents: a short summary, or a detailed report with overview, findings per source and a source list.",
		Examples: []string{"summarize what the documents say about retries", "write a detailed report on consumer ack policies",
			"give me a short answer with sources"},
	}
}

// Input is the composer's step input.
type Input struct {
	Query        string `json:"query,omitempty"`
	MaxSentences int    `json:"max_sentences,omitempty"`
}

// Output is what the composer returns.
type Output struct {
	Answer         string     `json:"answer"`
	Citations      []Citation `json:"citations"`
	Method         string     `json:"method"`
	FallbackReason string     `json:"fallback_reason,omitempty"`
	SourcesUsed    int        `json:"sources_used"`
	Remembered     []string   `json:"remembered,omitempty"`
}

// Citation is what [N] in the answer refers to: one chunk of a document.
type Citation struct {
	N       int    `json:"n"`
	DocID   string `json:"doc_id"`
	Title   string `json:"title,omitempty"`
	Source  string `json:"source,omitempty"`
	ChunkID string `json:"chunk_id"`
	// URL is the web page cited, for a web result (or a web page
	// ingested earlier); empty for a local document.
	URL string `json:"url,omitempty"`
	// Page, Sheet and Rows say where in an uploaded file the cited chunk
	// is: a PDF's page, a spreadsheet's sheet and row range ("2-14").
	Page  int    `json:"page,omitempty"`
	Sheet string `json:"sheet,omitempty"`
	Rows  string `json:"rows,omitempty"`
}

// hit is the part of a search hit the composer reads.
type hit struct {
	ID     string `json:"id"`
	DocID  string `json:"doc_id"`
	Title  string `json:"title"`
	Text   string `json:"text"`
	Source string `json:"source"`
	// Metadata carries a web page's "url".
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Handle composes the answer for the step's capability.
func (a *Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	report := false
	switch req.Capability {
	case CapabilitySummarize:
	case CapabilityDetailedReport:
		report = true
	default:
		return nil, fmt.Errorf("%w: %w %q", agents.ErrPermanent, ErrCapability, req.Capability)
	}
	var in Input
	if err := agentkit.Decode(req, agentkit.InputSchema(req.Capability), &in); err != nil {
		return nil, err
	}
	g := gather(req)
	query := agentkit.QueryOf(req, in.Query)
	if query == "" {
		query = g.query
	}
	found := withWeb(g.hits, webHits(req))
	hits := slices.Clone(found)
	for _, s := range g.steps {
		hits = append(hits, stepHit(s))
	}
	facts := remembered(req)
	k := a.cfg.SummarySentences
	if report {
		k = a.cfg.ReportSentences
	}
	if in.MaxSentences > 0 {
		k = in.MaxSentences
	}
	c := &composition{query: query, understood: querykind.Understand(query), hits: hits, found: len(found),
		facts: facts, report: report, k: k, emit: emit, problems: req.Problems, conversation: req.Conversation}
	c.comparison = comparisonOf(c.understood, g.sides)
	out := Output{Method: MethodExtractive, Remembered: facts}
	switch {
	case len(hits) == 0:
		c.nothingFound()
	default:
		ok, reason := a.tryLLM(ctx, c, emit)
		if !ok {
			out.FallbackReason = reason
			c.extractive()
		} else {
			out.Method = MethodLLM
		}
	}
	if !report {
		c.add(c.webSources())
	}
	if err := c.stream(ctx); err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	out.Answer, out.Citations, out.SourcesUsed = c.answer(), c.citations(), c.sources()
	return agentkit.Encode(agentkit.OutputSchema(req.Capability), out)
}

// usable drops hits without text or ids, which cannot be cited.
func usable(hits []hit) []hit {
	out := make([]hit, 0, len(hits))
	for _, h := range hits {
		if strings.TrimSpace(h.Text) != "" && h.ID != "" {
			if h.DocID == "" {
				h.DocID = h.ID
			}
			out = append(out, h)
		}
	}
	return out
}
