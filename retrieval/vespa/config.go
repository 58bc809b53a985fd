package vespa

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/agentbus/agentbus/llm"
)

// Sentinel errors. Every error this package returns wraps one of them or a
// retrieval sentinel (retrieval.ErrInvalidTenant, ErrUnknownProfile,
// ErrInvalidDocument).
var (
	// ErrConfig: the Config is unusable (see Config.Validate).
	ErrConfig = errors.New("vespa: invalid config")
	// ErrFeed: Vespa refused or failed a Document v1 write.
	ErrFeed = errors.New("vespa: feed failed")
	// ErrQuery: Vespa refused or failed a query (an HTTP error or an
	// entry in root.errors).
	ErrQuery = errors.New("vespa: query failed")
	// ErrInvalidFilter: a metadata filter key or value that cannot be
	// written as a YQL string (control characters, invalid UTF-8, empty
	// key).
	ErrInvalidFilter = errors.New("vespa: invalid filter")
	// ErrResponse: Vespa answered with a body this client cannot read.
	ErrResponse = errors.New("vespa: unreadable response")
)

// Config says where Vespa is and how to talk to it. The zero value of
// every field but URL means its default.
type Config struct {
	// URL is the container's base URL, e.g. http://localhost:8080.
	// Required.
	URL string
	// Namespace is the document id namespace (id:<namespace>:<doctype>::…);
	// default "agentbus".
	Namespace string
	// Schema is the prefix of every tenant's schema name, <Schema>_<tenant>;
	// default "chunk".
	Schema string
	// Cluster is the content cluster's id, passed as Document v1's
	// cluster= on the selection-based visits and deletes of List,
	// Document, Delete and Replace; default "agentbus_content", as in the
	// rendered services.xml.
	Cluster string
	// Embedder embeds chunks that carry no vector and every vector query;
	// default llm.LocalEmbedder{} (256 dimensions, matching the committed
	// application package).
	Embedder llm.Embedder
	// HTTPClient sends the requests; default a client with no overall
	// timeout (each request is bounded by Timeout and its context).
	HTTPClient *http.Client
	// Timeout bounds each HTTP request and is passed to Vespa (the
	// document/v1 ?timeout= and the query "timeout"); default 10s.
	Timeout time.Duration
	// FeedConcurrency is how many Document v1 requests Index keeps in
	// flight; default 8.
	FeedConcurrency int
	// MaxRetries is how often a request answered 429 or 503 is retried;
	// default 5. Negative means never.
	MaxRetries int
	// RetryBackoff is the first retry's delay, doubled per attempt up to
	// 32 times it, with jitter; default 100ms.
	RetryBackoff time.Duration
	// Logger receives a warning per partial-coverage result; default
	// slog.Default().
	Logger *slog.Logger
}

// identPattern is what a Vespa schema name part may be: Vespa identifiers
// are [a-zA-Z_][a-zA-Z0-9_]*; the prefix must start with a letter.
var identPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// namespacePattern keeps the namespace a single safe path segment.
var namespacePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func (c *Config) setDefaults() {
	if c.Namespace == "" {
		c.Namespace = "agentbus"
	}
	if c.Schema == "" {
		c.Schema = "chunk"
	}
	if c.Cluster == "" {
		c.Cluster = "agentbus_content"
	}
	if c.Embedder == nil {
		c.Embedder = llm.LocalEmbedder{}
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	if c.FeedConcurrency == 0 {
		c.FeedConcurrency = 8
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 5
	}
	if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem with the configuration, joined; each
// wraps ErrConfig.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	if c.URL == "" {
		bad("URL is required (e.g. http://localhost:8080)")
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("URL %q: want http(s)://host[:port]", c.URL)
	} else if u.RawQuery != "" || u.Fragment != "" {
		bad("URL %q: want no query or fragment", c.URL)
	}
	if !namespacePattern.MatchString(c.Namespace) {
		bad("Namespace %q: want %s", c.Namespace, namespacePattern)
	}
	if !namespacePattern.MatchString(c.Cluster) {
		bad("Cluster %q: want %s", c.Cluster, namespacePattern)
	}
	if !identPattern.MatchString(c.Schema) {
		bad("Schema %q: want a Vespa identifier matching %s", c.Schema, identPattern)
	}
	if c.Timeout < 0 {
		bad("Timeout %v: want > 0", c.Timeout)
	}
	if c.FeedConcurrency < 0 {
		bad("FeedConcurrency %d: want > 0", c.FeedConcurrency)
	}
	if c.RetryBackoff < 0 {
		bad("RetryBackoff %v: want > 0", c.RetryBackoff)
	}
	return errors.Join(errs...)
}
