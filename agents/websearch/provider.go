package websearch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Provider names.
const (
	ProviderTavily  = "tavily"
	ProviderSearXNG = "searxng"
	ProviderBrave   = "brave"
)

// Environment variables that hold the providers' API keys.
const (
	TavilyKeyEnv = "TAVILY_API_KEY"
	BraveKeyEnv  = "BRAVE_API_KEY"
)

// Default base URLs; SearXNG has none (it is self-hosted).
const (
	TavilyURL = "https://api.tavily.com"
	BraveURL  = "https://api.search.brave.com"
)

// Topics and depths of a Query.
const (
	TopicGeneral  = "general"
	TopicNews     = "news"
	DepthBasic    = "basic"
	DepthAdvanced = "advanced"
)

// Query is one web search.
type Query struct {
	Text string
	// MaxResults is how many results to ask for; providers cap it.
	MaxResults int
	// Topic is TopicGeneral or TopicNews.
	Topic string
	// Depth is DepthBasic or DepthAdvanced (Tavily's search_depth).
	Depth string
	// RawContent asks for each page's full text where the provider can
	// give it (Tavily's include_raw_content).
	RawContent bool
}

// Result is one page a provider found.
type Result struct {
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
	// Snippet is the provider's short extract of the page.
	Snippet string `json:"snippet,omitempty"`
	// Content is the page's full text when the provider gave it.
	Content string `json:"content,omitempty"`
	// Score is the provider's relevance score, or 1/rank when it gives
	// none (Brave).
	Score     float64 `json:"score"`
	Published string  `json:"published,omitempty"`
	// Engine is the engine that found the page (SearXNG).
	Engine string `json:"engine,omitempty"`
}

// Page is the extracted text of one URL.
type Page struct {
	URL     string `json:"url"`
	Content string `json:"content,omitempty"`
	// Error says why the page could not be extracted.
	Error string `json:"error,omitempty"`
}

// Provider searches the web. Implementations are safe for concurrent use.
type Provider interface {
	// Name is one of the Provider* constants.
	Name() string
	Search(ctx context.Context, q Query) ([]Result, error)
}

// Extractor is a Provider that also fetches pages' full text (Tavily's
// /extract).
type Extractor interface {
	Extract(ctx context.Context, urls []string) ([]Page, error)
}

var (
	_ Provider  = (*Tavily)(nil)
	_ Extractor = (*Tavily)(nil)
	_ Provider  = (*SearXNG)(nil)
	_ Provider  = (*Brave)(nil)
)

// ErrUnauthorized is wrapped by a ProviderError whose provider refused
// the credentials (HTTP 401 or 403).
var ErrUnauthorized = errors.New("websearch: provider refused the credentials")

// ErrRateLimited is wrapped by a ProviderError for HTTP 429 once the
// retries allowed are spent.
var ErrRateLimited = errors.New("websearch: provider rate limit")

// ProviderError is a provider's HTTP failure: which provider, which
// status, and (for a refused key) the environment variable the key comes
// from.
type ProviderError struct {
	Provider string
	Status   int
	// KeyEnv names the key's environment variable ("" for a provider
	// without one).
	KeyEnv string
	// Body is the start of the provider's answer, for the message.
	Body string
	// RetryAfter is what the provider asked for with a 429.
	RetryAfter time.Duration
}

func (e *ProviderError) Error() string {
	body := ""
	if e.Body != "" {
		body = ": " + e.Body
	}
	switch {
	case e.unauthorized() && e.KeyEnv != "":
		return fmt.Sprintf("websearch: %s refused the API key (HTTP %d%s): set %s to a valid %s API key", e.Provider, e.Status, body, e.KeyEnv, e.Provider)
	case e.unauthorized():
		return fmt.Sprintf("websearch: %s refused the request (HTTP %d%s): check that the instance allows the JSON API (search.formats: [html, json] in its settings.yml)", e.Provider, e.Status, body)
	case e.Status == http.StatusTooManyRequests:
		return fmt.Sprintf("websearch: %s is rate limiting (HTTP 429%s); retried and gave up for now", e.Provider, body)
	}
	return fmt.Sprintf("websearch: %s answered HTTP %d%s", e.Provider, e.Status, body)
}

func (e *ProviderError) unauthorized() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
}

// Is makes errors.Is match ErrUnauthorized and ErrRateLimited.
func (e *ProviderError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.unauthorized()
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests
	}
	return false
}

// Permanent reports whether retrying cannot help: a refused key, or a
// request the provider rejects as bad. Rate limits, server errors and
// timeouts may pass.
func (e *ProviderError) Permanent() bool {
	switch {
	case e.Status == http.StatusTooManyRequests, e.Status == http.StatusRequestTimeout, e.Status >= 500:
		return false
	}
	return e.Status >= 400
}

// ProviderConfig configures a provider client. Name is required; the zero
// value of every other field means its default.
type ProviderConfig struct {
	// Name is ProviderTavily, ProviderSearXNG or ProviderBrave.
	Name string
	// BaseURL overrides the provider's URL (required for SearXNG): a
	// self-hosted instance, a proxy, or a test server.
	BaseURL string
	// APIKey is the provider's key (Tavily, Brave); the caller reads it
	// from the environment variable the provider documents.
	APIKey string
	// HTTP is the client used; default one with a 30s timeout.
	HTTP *http.Client
	// Retry bounds the retries of a rate-limited request.
	Retry Retry
	// UserAgent is sent with every request; default "agentbus-websearch".
	UserAgent string
}

// KeyEnv is the environment variable the named provider's key is read
// from, "" for a provider without a key.
func KeyEnv(provider string) string {
	switch provider {
	case ProviderTavily:
		return TavilyKeyEnv
	case ProviderBrave:
		return BraveKeyEnv
	}
	return ""
}

// Providers lists the provider names NewProvider accepts.
func Providers() []string { return []string{ProviderTavily, ProviderSearXNG, ProviderBrave} }

func (c *ProviderConfig) setDefaults() {
	if c.HTTP == nil {
		c.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if c.UserAgent == "" {
		c.UserAgent = "agentbus-websearch"
	}
	if c.BaseURL == "" {
		switch c.Name {
		case ProviderTavily:
			c.BaseURL = TavilyURL
		case ProviderBrave:
			c.BaseURL = BraveURL
		}
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	c.Retry.setDefaults()
}

// Validate reports every problem with the configuration.
func (c ProviderConfig) Validate() error {
	var errs []error
	switch c.Name {
	case ProviderTavily, ProviderBrave:
		if c.APIKey == "" {
			errs = append(errs, fmt.Errorf("websearch: %s needs an API key (set %s)", c.Name, KeyEnv(c.Name)))
		}
	case ProviderSearXNG:
		if c.BaseURL == "" {
			errs = append(errs, errors.New("websearch: searxng needs the instance's base URL"))
		}
	default:
		errs = append(errs, fmt.Errorf("websearch: provider %q: want one of %s", c.Name, strings.Join(Providers(), ", ")))
	}
	if c.BaseURL != "" && !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		errs = append(errs, fmt.Errorf("websearch: base URL %q: want http:// or https://", c.BaseURL))
	}
	if err := c.Retry.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// NewProvider returns the client of the provider cfg names.
func NewProvider(cfg ProviderConfig) (Provider, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &client{cfg: cfg}
	switch cfg.Name {
	case ProviderTavily:
		return &Tavily{c: h}, nil
	case ProviderBrave:
		return &Brave{c: h}, nil
	default:
		return &SearXNG{c: h}, nil
	}
}
