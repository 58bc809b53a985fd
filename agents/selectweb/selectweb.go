package selectweb

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit"
)

// Capability is the capability the select agent serves.
const Capability = "select"

// DefaultBlocked are the domains blocked when Config.Blocked is nil:
// social networks and pin boards, whose pages are walls of other pages.
var DefaultBlocked = []string{"facebook.com", "instagram.com", "pinterest.com", "tiktok.com", "twitter.com", "x.com"}

// Config configures the agent; its zero value means the seed's rules.
type Config struct {
	// MinSnippet is the shortest snippet (in characters) a kept result
	// may have; default 40.
	MinSnippet int
	// Blocked are domains whose pages (and their subdomains') are
	// dropped; nil means DefaultBlocked, an empty slice blocks none.
	Blocked []string
	// TopK is how many results are kept at most; default 5.
	TopK int
	// KeepPDFLast turns off the seed's preference for PDFs (which are
	// otherwise ranked before pages).
	KeepPDFLast bool
	// MaxText bounds a document's text in characters; default 200,000.
	MaxText int
}

func (c *Config) setDefaults() {
	if c.MinSnippet == 0 {
		c.MinSnippet = 40
	}
	if c.Blocked == nil {
		c.Blocked = DefaultBlocked
	}
	if c.TopK == 0 {
		c.TopK = 5
	}
	if c.MaxText == 0 {
		c.MaxText = 200_000
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.MinSnippet < 0 {
		errs = append(errs, fmt.Errorf("selectweb: MinSnippet %d is negative", c.MinSnippet))
	}
	if c.TopK < 1 || c.TopK > 50 {
		errs = append(errs, fmt.Errorf("selectweb: TopK %d not in [1, 50]", c.TopK))
	}
	if c.MaxText < 1 {
		errs = append(errs, fmt.Errorf("selectweb: MaxText %d: want at least 1", c.MaxText))
	}
	return errors.Join(errs...)
}

// Agent selects web results. It is safe for concurrent use.
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
	cfg.Blocked = slices.Clone(cfg.Blocked)
	return &Agent{cfg: cfg}, nil
}

// Card describes the agent.
func (a *Agent) Card() agents.Card {
	return agents.Card{
		Name: "select", Version: "1.0.0", Capabilities: []string{Capability},
		Description: "Selects which web search results are worth indexing: drops duplicates, blocked domains, noindex pages and thin snippets, prefers PDFs, keeps the top few, and gives a reason for every result dropped.",
		Examples:    []string{"select the useful web results", "filter these search results before ingesting them"},
	}
}

// Result is the part of a web_search result read here.
type Result struct {
	URL     string  `json:"url"`
	Title   string  `json:"title"`
	Snippet string  `json:"snippet"`
	Content string  `json:"content"`
	Score   float64 `json:"score"`
}

// Batch is the results of one web search: the part of a web_search
// step's output read here.
type Batch struct {
	Query    string   `json:"query"`
	Provider string   `json:"provider"`
	Results  []Result `json:"results"`
}

// Document is one page kept, in the shape the ingest agent indexes.
type Document struct {
	ID       string         `json:"id"`
	Title    string         `json:"title,omitempty"`
	Text     string         `json:"text"`
	Source   string         `json:"source"`
	Metadata map[string]any `json:"metadata"`
}

// Dropped is one result not kept, and why.
type Dropped struct {
	URL    string `json:"url"`
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
}

// Output is what the agent returns.
type Output struct {
	Query     string     `json:"query,omitempty"`
	Documents []Document `json:"documents"`
	Dropped   []Dropped  `json:"dropped"`
	// Confidence is 1 when nothing was kept: with nothing to ingest, a
	// select step that requires approval is auto-approved rather than
	// asking a human about an empty list. It is absent otherwise.
	Confidence *float64 `json:"confidence,omitempty"`
}

// Input is the step's input: results to select from directly, for a plan
// without a web_search step (they are added to the dependencies').
type Input struct {
	Query    string   `json:"query,omitempty"`
	Provider string   `json:"provider,omitempty"`
	Results  []Result `json:"results,omitempty"`
}

// Handle selects among the results of the web_search steps the step
// depends on (in step-id order) and those of its input.
func (a *Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	var in Input
	if s := strings.TrimSpace(string(req.Input)); s != "" && s != "null" {
		if err := json.Unmarshal(req.Input, &in); err != nil {
			return nil, fmt.Errorf("%w: select input: %v", agents.ErrPermanent, err)
		}
	}
	batches := []Batch{{Query: in.Query, Provider: in.Provider, Results: in.Results}}
	for _, id := range slices.Sorted(maps.Keys(req.DependencyOutputs)) {
		var o Batch
		if json.Unmarshal(req.DependencyOutputs[id], &o) == nil && o.Results != nil {
			batches = append(batches, o)
		}
	}
	out := a.Select(batches...)
	out.Query = agentkit.QueryOf(req, in.Query)
	if len(out.Documents) == 0 {
		sure := 1.0
		out.Confidence = &sure
	}
	agentkit.Progress(ctx, emit, 100, fmt.Sprintf("kept %d web results, dropped %d", len(out.Documents), len(out.Dropped)))
	return json.Marshal(out)
}

// candidate is a result that passed the filters, waiting to be ranked.
type candidate struct {
	r        Result
	url      string
	provider string
	pdf      bool
	order    int
}

// Select applies the rules to the results of every batch, in order; a
// URL in two batches is a duplicate like one twice in the same batch.
func (a *Agent) Select(batches ...Batch) Output {
	out := Output{Documents: []Document{}, Dropped: []Dropped{}}
	seen := map[string]string{} // normalized → the URL first given
	var cands []candidate
	for _, b := range batches {
		for _, r := range b.Results {
			u, ok := NormalizeURL(r.URL)
			drop := func(rule, reason string) {
				out.Dropped = append(out.Dropped, Dropped{URL: r.URL, Rule: rule, Reason: reason})
			}
			if !ok {
				drop(RuleInvalidURL, "not an absolute http(s) URL")
				continue
			}
			if first, dup := seen[u]; dup {
				drop(RuleDuplicate, "duplicate of "+first)
				continue
			}
			seen[u] = r.URL
			if d, blocked := blockedBy(domainOf(u), a.cfg.Blocked); blocked {
				drop(RuleBlocked, "blocked domain "+d)
				continue
			}
			if m, no := noindex(r.Content + "\n" + r.Snippet); no {
				drop(RuleNoindex, fmt.Sprintf("the page asks not to be indexed (%s)", m))
				continue
			}
			snippet := strings.TrimSpace(r.Snippet)
			if snippet == "" {
				snippet = strings.TrimSpace(r.Content)
			}
			if n := utf8.RuneCountInString(snippet); n < a.cfg.MinSnippet {
				drop(RuleTooShort, fmt.Sprintf("snippet of %d characters, shorter than %d", n, a.cfg.MinSnippet))
				continue
			}
			cands = append(cands, candidate{r: r, url: u, provider: b.Provider, pdf: isPDF(u), order: len(cands)})
		}
	}
	slices.SortStableFunc(cands, func(x, y candidate) int {
		if !a.cfg.KeepPDFLast && x.pdf != y.pdf {
			if x.pdf {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(y.r.Score, x.r.Score), cmp.Compare(x.order, y.order))
	})
	for i, c := range cands {
		if i >= a.cfg.TopK {
			out.Dropped = append(out.Dropped, Dropped{URL: c.r.URL, Rule: RuleTopK, Reason: fmt.Sprintf("ranked %d, only the top %d are kept", i+1, a.cfg.TopK)})
			continue
		}
		out.Documents = append(out.Documents, a.document(c, i+1))
	}
	return out
}

// document is a kept result as the ingest agent indexes it.
func (a *Agent) document(c candidate, rank int) Document {
	text := strings.TrimSpace(c.r.Content)
	if text == "" {
		text = strings.TrimSpace(c.r.Snippet)
	}
	if utf8.RuneCountInString(text) > a.cfg.MaxText {
		text = string([]rune(text)[:a.cfg.MaxText])
	}
	title := strings.TrimSpace(c.r.Title)
	if title == "" {
		title = c.url
	}
	md := map[string]any{"url": c.url, "title": title, "score": c.r.Score, "rank": rank, "origin": "web"}
	if c.provider != "" {
		md["provider"] = c.provider
	}
	if c.pdf {
		md["pdf"] = true
	}
	return Document{ID: c.url, Title: title, Text: text, Source: c.url, Metadata: md}
}
