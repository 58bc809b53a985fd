package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// ErrBadEmbeddings is returned when an embeddings endpoint answers 200 but
// the answer cannot be used: unreadable JSON, the wrong number of vectors,
// an index out of range or repeated, or vectors of the wrong dimension.
var ErrBadEmbeddings = errors.New("llm: unusable embeddings answer")

// OpenAIEmbedderConfig configures an OpenAIEmbedder. BaseURL and Model are
// required; the zero value of every other field means its default.
type OpenAIEmbedderConfig struct {
	// BaseURL is the base URL of an OpenAI-compatible API, the part before
	// /embeddings, e.g. "http://localhost:11434/v1".
	BaseURL string
	// Model is the embedding model name sent with every request.
	Model string
	// APIKey is sent as a bearer token; empty sends none. It never appears
	// in errors or Name.
	APIKey string
	// Dim, when set, is the dimension every vector must have. When zero,
	// the first answer fixes it and later answers must agree, so that one
	// index never mixes dimensions.
	Dim int
	// Timeout bounds one request (one batch), retries included; default 30s.
	Timeout time.Duration
	// BatchSize is how many texts go in one request; default 64.
	BatchSize int
	// Retries is how many times a request failing with a connection error,
	// 408, 409, 429 or 5xx is retried with backoff; default 0.
	Retries int
	// HTTPClient, when set, sends the requests.
	HTTPClient *http.Client
}

func (c *OpenAIEmbedderConfig) setDefaults() {
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	if c.BatchSize == 0 {
		c.BatchSize = 64
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
}

// Validate reports every problem with the configuration.
func (c OpenAIEmbedderConfig) Validate() error {
	errs := endpointProblems("embeddings", "BaseURL", c.BaseURL, c.Model)
	if c.Dim < 0 {
		errs = append(errs, fmt.Errorf("llm: embeddings Dim %d is negative", c.Dim))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("llm: embeddings timeout %s is negative", c.Timeout))
	}
	if c.BatchSize < 0 {
		errs = append(errs, fmt.Errorf("llm: embeddings batch size %d is negative", c.BatchSize))
	}
	if c.Retries < 0 {
		errs = append(errs, fmt.Errorf("llm: embeddings retries %d is negative", c.Retries))
	}
	return errors.Join(errs...)
}

// OpenAIEmbedder embeds texts through an OpenAI-compatible embeddings
// endpoint (POST <BaseURL>/embeddings) with the official openai-go client,
// in batches, returning L2-normalised vectors in input order. It is safe
// for concurrent use.
type OpenAIEmbedder struct {
	cfg     OpenAIEmbedderConfig
	service openai.EmbeddingService
	dim     atomic.Int64 // cfg.Dim, or the dimension of the first answer
}

var _ Embedder = (*OpenAIEmbedder)(nil)

// NewOpenAIEmbedder checks cfg and makes a client. It makes no request.
func NewOpenAIEmbedder(cfg OpenAIEmbedderConfig) (*OpenAIEmbedder, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(cfg.Retries),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	// Built directly, not through openai.NewClient, which would read
	// OPENAI_API_KEY and OPENAI_BASE_URL from the environment.
	e := &OpenAIEmbedder{cfg: cfg, service: openai.NewEmbeddingService(opts...)}
	e.dim.Store(int64(cfg.Dim))
	return e, nil
}

// Name says which model at which host embeds, e.g.
// "nomic-embed-text at localhost:11434"; it never contains credentials.
func (e *OpenAIEmbedder) Name() string { return e.cfg.Model + " at " + e.host() }

func (e *OpenAIEmbedder) host() string {
	u, _ := url.Parse(e.cfg.BaseURL)
	return u.Host
}

// Embed returns one L2-normalised vector per text, in the order of texts,
// sending at most BatchSize texts per request. No texts, no request.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.cfg.BatchSize {
		batch := texts[start:min(start+e.cfg.BatchSize, len(texts))]
		vecs, err := e.embedBatch(ctx, batch)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *OpenAIEmbedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	ctx, span := startSpan(ctx, "embeddings", e.cfg.Model, e.host())
	res, err := e.service.New(ctx, openai.EmbeddingNewParams{
		Model:          openai.EmbeddingModel(e.cfg.Model),
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	})
	if err != nil {
		endSpan(span, "", 0, 0, e.wrap(ctx, err))
	} else {
		endSpan(span, res.Model, res.Usage.PromptTokens, 0, nil)
	}
	if err != nil {
		return nil, e.wrap(ctx, err)
	}
	if len(res.Data) != len(texts) {
		return nil, fmt.Errorf("%w: %s sent %d vectors for %d texts", ErrBadEmbeddings, e.host(), len(res.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range res.Data {
		if d.Index < 0 || d.Index >= int64(len(texts)) {
			return nil, fmt.Errorf("%w: %s sent index %d for %d texts", ErrBadEmbeddings, e.host(), d.Index, len(texts))
		}
		if out[d.Index] != nil {
			return nil, fmt.Errorf("%w: %s sent index %d twice", ErrBadEmbeddings, e.host(), d.Index)
		}
		if err := e.checkDim(len(d.Embedding)); err != nil {
			return nil, err
		}
		out[d.Index] = normalise(d.Embedding)
	}
	return out, nil
}

// checkDim fixes the dimension on first use and holds every vector to it.
func (e *OpenAIEmbedder) checkDim(n int) error {
	if n == 0 {
		return fmt.Errorf("%w: %s sent an empty vector", ErrBadEmbeddings, e.host())
	}
	if e.dim.CompareAndSwap(0, int64(n)) {
		return nil
	}
	if want := e.dim.Load(); int64(n) != want {
		return fmt.Errorf("%w: %s sent a vector of dimension %d, want %d", ErrBadEmbeddings, e.host(), n, want)
	}
	return nil
}

// normalise converts to float32 with unit L2 norm; a zero vector stays zero.
func normalise(v []float64) []float32 {
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, len(v))
	if norm == 0 {
		return out
	}
	inv := 1 / math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x * inv)
	}
	return out
}

// embedStatus is a *StatusError from the embeddings endpoint: errors.As
// finds the *StatusError, and the message names the right endpoint.
type embedStatus struct{ *StatusError }

func (e embedStatus) Error() string {
	s := fmt.Sprintf("llm: embeddings endpoint answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		s += ": " + truncate(e.Message, 200)
	}
	return s
}

func (e embedStatus) Unwrap() error { return e.StatusError }

// wrap turns the client library's errors into this package's, never
// quoting the request URL (which may carry credentials).
func (e *OpenAIEmbedder) wrap(ctx context.Context, err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return embedStatus{&StatusError{StatusCode: apiErr.StatusCode, Message: apiErr.Message}}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("llm: embeddings endpoint did not answer within %s: %w", e.cfg.Timeout, context.DeadlineExceeded)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("llm: embeddings request canceled: %w", context.Canceled)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("llm: embeddings endpoint %s unreachable: %w", e.host(), ue.Err)
	}
	// What is left is an answer the client could not decode.
	return fmt.Errorf("%w: %s: %v", ErrBadEmbeddings, e.host(), err)
}
