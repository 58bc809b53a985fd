package websearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
	"github.com/agentbus/agentbus/llm"
)

// Capability is the capability the web search agent serves.
const Capability = "web_search"

// Config configures the agent. Provider is required.
type Config struct {
	Provider Provider
	// MaxResults is how many results to ask for when the input does not
	// say; default 10, at most 20.
	MaxResults int
	// Depth is Tavily's search_depth (basic or advanced); default basic.
	Depth string
	// Topic is the default topic (general or news); empty means news when
	// the query speaks of news or headlines, else general.
	Topic string
	// RawContent asks the provider for each page's full text (Tavily's
	// include_raw_content), which the select and ingest steps then use
	// instead of the snippet.
	RawContent bool
	// Extract fetches the full text of results that came without it
	// through the provider's extract call (Tavily's /extract), the first
	// ExtractTop of them; a page that fails keeps its snippet.
	Extract    bool
	ExtractTop int
}

func (c *Config) setDefaults() {
	if c.MaxResults == 0 {
		c.MaxResults = 10
	}
	if c.Depth == "" {
		c.Depth = DepthBasic
	}
	if c.ExtractTop == 0 {
		c.ExtractTop = 5
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Provider == nil {
		errs = append(errs, errors.New("websearch: Provider is required"))
	}
	if c.MaxResults < 1 || c.MaxResults > 20 {
		errs = append(errs, fmt.Errorf("websearch: MaxResults %d not in [1, 20]", c.MaxResults))
	}
	if c.Depth != DepthBasic && c.Depth != DepthAdvanced {
		errs = append(errs, fmt.Errorf("websearch: Depth %q: want basic or advanced", c.Depth))
	}
	if c.Topic != "" && c.Topic != TopicGeneral && c.Topic != TopicNews {
		errs = append(errs, fmt.Errorf("websearch: Topic %q: want general or news", c.Topic))
	}
	if c.ExtractTop < 0 || c.ExtractTop > 20 {
		errs = append(errs, fmt.Errorf("websearch: ExtractTop %d not in [0, 20]", c.ExtractTop))
	}
	return errors.Join(errs...)
}

// Agent searches the web. It is safe for concurrent use.
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

// Card describes the agent.
func (a *Agent) Card() agents.Card {
	return agents.Card{
		Name: "web_search", Version: "1.0.0", Capabilities: []string{Capability},
		Description: "Searches the web (" + a.cfg.Provider.Name() + ") for current or external information: pages with their URLs, titles, snippets and text, for a select step to filter and an ingest step to index.",
		Examples:    []string{"what is the latest news about NATS", "search the web for this week's Go release", "find current information online"},
	}
}

// Input is the step's input; every field is optional.
type Input struct {
	// Query defaults to the workflow's.
	Query      string `json:"query,omitempty"`
	MaxResults int    `json:"max_results,omitempty"`
	Topic      string `json:"topic,omitempty"`
	Depth      string `json:"depth,omitempty"`
	// URLs, when set, are extracted instead of searched (Tavily only).
	URLs []string `json:"urls,omitempty"`
}

// Output is what the agent returns.
type Output struct {
	Query    string   `json:"query,omitempty"`
	Provider string   `json:"provider"`
	Topic    string   `json:"topic,omitempty"`
	Results  []Result `json:"results"`
	// Extracted counts the results whose text came from an extract call.
	Extracted int `json:"extracted,omitempty"`
}

// Handle searches (or extracts the input's URLs).
func (a *Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	var in Input
	if len(strings.TrimSpace(string(req.Input))) > 0 && string(req.Input) != "null" {
		if err := json.Unmarshal(req.Input, &in); err != nil {
			return nil, fmt.Errorf("%w: web_search input: %v", agents.ErrPermanent, err)
		}
	}
	p := a.cfg.Provider
	out := Output{Provider: p.Name(), Results: []Result{}}
	if len(in.URLs) > 0 {
		return a.extractOnly(ctx, in.URLs, out, emit)
	}
	q, err := agentkit.NeedQuery(req, in.Query, errNoQuery)
	if err != nil {
		return nil, err
	}
	query := Query{Text: q, MaxResults: cmpOr(in.MaxResults, a.cfg.MaxResults), Depth: cmpOr(in.Depth, a.cfg.Depth),
		Topic: cmpOr(in.Topic, a.cfg.Topic, topicOf(q)), RawContent: a.cfg.RawContent}
	if query.Depth != DepthBasic && query.Depth != DepthAdvanced {
		return nil, fmt.Errorf("%w: web_search input: /depth %q: want basic or advanced", agents.ErrPermanent, query.Depth)
	}
	if query.Topic != TopicGeneral && query.Topic != TopicNews {
		return nil, fmt.Errorf("%w: web_search input: /topic %q: want general or news", agents.ErrPermanent, query.Topic)
	}
	agentkit.Progress(ctx, emit, 10, fmt.Sprintf("searching %s (%s, %s)", p.Name(), query.Topic, query.Depth))
	res, err := p.Search(ctx, query)
	if err != nil {
		return nil, classify(err)
	}
	out.Query, out.Topic, out.Results = q, query.Topic, res
	if a.cfg.Extract {
		if out.Extracted, err = a.fill(ctx, out.Results); err != nil {
			return nil, classify(err)
		}
	}
	agentkit.Progress(ctx, emit, 100, fmt.Sprintf("%s found %d pages", p.Name(), len(out.Results)))
	return json.Marshal(out)
}

// fill extracts the text of the first ExtractTop results that have none.
func (a *Agent) fill(ctx context.Context, res []Result) (int, error) {
	ex, ok := a.cfg.Provider.(Extractor)
	if !ok {
		return 0, nil
	}
	var urls []string
	at := map[string]int{}
	for i, r := range res {
		if r.Content == "" && r.URL != "" && len(urls) < a.cfg.ExtractTop {
			if _, dup := at[r.URL]; !dup {
				at[r.URL] = i
				urls = append(urls, r.URL)
			}
		}
	}
	if len(urls) == 0 {
		return 0, nil
	}
	pages, err := ex.Extract(ctx, urls)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pg := range pages {
		if i, ok := at[pg.URL]; ok && pg.Content != "" {
			res[i].Content = pg.Content
			n++
		}
	}
	return n, nil
}

// extractOnly answers a step that names URLs: each page's text as a
// result (a failed page keeps its error as the snippet's reason).
func (a *Agent) extractOnly(ctx context.Context, urls []string, out Output, emit agents.Emitter) (json.RawMessage, error) {
	ex, ok := a.cfg.Provider.(Extractor)
	if !ok {
		return nil, fmt.Errorf("%w: web_search input: /urls: %s cannot extract pages (tavily can)", agents.ErrPermanent, a.cfg.Provider.Name())
	}
	if len(urls) > 20 {
		return nil, fmt.Errorf("%w: web_search input: /urls: %d URLs, at most 20", agents.ErrPermanent, len(urls))
	}
	pages, err := ex.Extract(ctx, urls)
	if err != nil {
		return nil, classify(err)
	}
	for i, pg := range pages {
		if pg.Content == "" {
			continue
		}
		out.Results = append(out.Results, Result{URL: pg.URL, Content: pg.Content, Score: 1 / float64(i+1)})
		out.Extracted++
	}
	agentkit.Progress(ctx, emit, 100, fmt.Sprintf("extracted %d of %d pages", out.Extracted, len(urls)))
	return json.Marshal(out)
}

// classify marks provider failures retrying cannot fix as permanent.
func classify(err error) error {
	var pe *ProviderError
	if errors.As(err, &pe) && pe.Permanent() {
		return fmt.Errorf("%w: %w", agents.ErrPermanent, err)
	}
	if errors.Is(err, errNoQuery) {
		return fmt.Errorf("%w: %w", agents.ErrPermanent, err)
	}
	return err
}

// topicOf is news for a query about news or headlines, else general.
func topicOf(q string) string {
	for _, w := range llm.Tokenize(q) {
		if w == "news" || w == "headlines" || w == "headline" {
			return TopicNews
		}
	}
	return TopicGeneral
}

func cmpOr[T comparable](vs ...T) T {
	var zero T
	for _, v := range vs {
		if v != zero {
			return v
		}
	}
	return zero
}
