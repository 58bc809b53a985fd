package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// APIKeyEnv is the environment variable a chat API key is conventionally
// read from. Chat itself never reads the environment: cmd/ passes the key.
const APIKeyEnv = "AGENTBUS_LLM_API_KEY"

// ChatConfig configures a Chat. URL and Model are required; the zero value
// of every other field means its default.
type ChatConfig struct {
	// URL is the base URL of an OpenAI-compatible API, the part before
	// /chat/completions, e.g. "http://localhost:11434/v1".
	URL string
	// Model is the model name sent with every request.
	Model string
	// APIKey is sent as a bearer token; empty sends none (local servers
	// rarely want one). It never appears in errors or Name.
	APIKey string
	// Timeout bounds one Complete call, retries included; default 15s.
	Timeout time.Duration
	// Retries is how many times a request failing with a connection error,
	// 408, 409, 429 or 5xx is retried with backoff; default 0, because a
	// caller that has a fallback is better served by failing fast.
	Retries int
	// HTTPClient, when set, sends the requests (tests, proxies, custom TLS).
	HTTPClient *http.Client
	// Observe, when set, is called after every completion (metrics: see
	// Call); it must be safe for concurrent use and quick.
	Observe func(Call)
}

func (c *ChatConfig) setDefaults() {
	if c.Timeout == 0 {
		c.Timeout = 15 * time.Second
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
}

// Validate reports every problem with the configuration.
func (c ChatConfig) Validate() error {
	errs := endpointProblems("chat", "URL", c.URL, c.Model)
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("llm: chat timeout %s is negative", c.Timeout))
	}
	if c.Retries < 0 {
		errs = append(errs, fmt.Errorf("llm: chat retries %d is negative", c.Retries))
	}
	return errors.Join(errs...)
}

// endpointProblems checks what every OpenAI-compatible client needs: an
// absolute http(s) base URL (named field in messages, never echoed with
// its credentials) and a model.
func endpointProblems(what, field, base, model string) []error {
	var errs []error
	if u, err := url.Parse(base); base == "" {
		errs = append(errs, fmt.Errorf("llm: %s config needs %s", what, field))
	} else if err != nil {
		errs = append(errs, fmt.Errorf("llm: %s %s does not parse as a URL", what, field))
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("llm: %s %s %q is not an absolute http(s) URL", what, field, redact(base)))
	}
	if strings.TrimSpace(model) == "" {
		errs = append(errs, fmt.Errorf("llm: %s config needs Model", what))
	}
	return errs
}

// Chat asks an OpenAI-compatible chat-completions endpoint
// (POST <URL>/chat/completions) for one answer at a time, through the
// official openai-go client. It is safe for concurrent use.
type Chat struct {
	cfg     ChatConfig
	service openai.ChatCompletionService
	// plainOnly is set once the server has rejected response_format, so
	// that later JSON requests do not pay for the rejection again.
	plainOnly atomic.Bool
}

// NewChat checks cfg and makes a client. It makes no request.
func NewChat(cfg ChatConfig) (*Chat, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.URL),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(cfg.Retries),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	// The service is built directly rather than through openai.NewClient,
	// which would also read OPENAI_API_KEY and OPENAI_BASE_URL from the
	// environment and could send an OpenAI key to another host.
	return &Chat{cfg: cfg, service: openai.NewChatCompletionService(opts...)}, nil
}

// Name says which model at which host answers, e.g.
// "llama3.1 at localhost:11434"; it never contains credentials.
func (c *Chat) Name() string { return c.cfg.Model + " at " + c.host() }

// host is the endpoint's host:port (Validate made sure the URL parses).
func (c *Chat) host() string {
	u, _ := url.Parse(c.cfg.URL)
	return u.Host
}

// ErrNoAnswer is returned when the endpoint answers without any content.
var ErrNoAnswer = errors.New("llm: the model gave no answer")

// StatusError is an HTTP error answer of the endpoint.
type StatusError struct {
	StatusCode int
	// Message is the API's own error message, if it sent one.
	Message string
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("llm: chat endpoint answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		s += ": " + truncate(e.Message, 200)
	}
	return s
}

// Complete sends a system and a user message and returns the text of the
// first choice.
func (c *Chat) Complete(ctx context.Context, system, user string) (string, error) {
	return c.complete(ctx, system, user, false)
}

// CompleteJSON is Complete asking for a JSON object answer
// (response_format json_object). A server that rejects response_format
// with 400 or 422 is asked again without it, and never again with it; the
// caller still has to check that the answer is JSON.
func (c *Chat) CompleteJSON(ctx context.Context, system, user string) (string, error) {
	if c.plainOnly.Load() {
		return c.complete(ctx, system, user, false)
	}
	out, err := c.complete(ctx, system, user, true)
	var se *StatusError
	if errors.As(err, &se) && (se.StatusCode == http.StatusBadRequest || se.StatusCode == http.StatusUnprocessableEntity) {
		out, err = c.complete(ctx, system, user, false)
		if err == nil {
			c.plainOnly.Store(true)
		}
	}
	return out, err
}

func (c *Chat) complete(ctx context.Context, system, user string, jsonMode bool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	params := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel(c.cfg.Model),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage(user)},
	}
	if jsonMode {
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	}
	ctx, span := startSpan(ctx, "chat", c.cfg.Model, c.host())
	start := time.Now()
	res, err := c.service.New(ctx, params)
	if err != nil {
		endSpan(span, "", 0, 0, c.wrap(ctx, err))
	} else {
		endSpan(span, res.Model, res.Usage.PromptTokens, res.Usage.CompletionTokens, nil)
		MeterModel(ctx, c.cfg.Model, res.Usage.PromptTokens, res.Usage.CompletionTokens)
	}
	if c.cfg.Observe != nil {
		call := Call{Model: c.cfg.Model, Duration: time.Since(start)}
		if err != nil {
			call.Err = c.wrap(ctx, err)
		} else {
			call.PromptTokens, call.CompletionTokens = res.Usage.PromptTokens, res.Usage.CompletionTokens
			if len(res.Choices) == 0 || res.Choices[0].Message.Content == "" {
				call.Err = ErrNoAnswer
			}
		}
		c.cfg.Observe(call)
	}
	if err != nil {
		return "", c.wrap(ctx, err)
	}
	if len(res.Choices) == 0 {
		return "", ErrNoAnswer
	}
	msg := res.Choices[0].Message
	if msg.Content == "" {
		if msg.Refusal != "" {
			return "", fmt.Errorf("%w: refused: %s", ErrNoAnswer, truncate(msg.Refusal, 200))
		}
		return "", ErrNoAnswer
	}
	return msg.Content, nil
}

// wrap turns the client library's errors into this package's: a
// *StatusError, a timeout naming the limit, or a transport error without
// the request URL (which may carry credentials).
func (c *Chat) wrap(ctx context.Context, err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return &StatusError{StatusCode: apiErr.StatusCode, Message: apiErr.Message}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("llm: chat endpoint did not answer within %s: %w", c.cfg.Timeout, context.DeadlineExceeded)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("llm: chat request canceled: %w", context.Canceled)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("llm: chat endpoint %s unreachable: %w", c.host(), ue.Err)
	}
	return fmt.Errorf("llm: chat: %w", err)
}

// redact drops the user info (a password) from a URL for error messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw // only called on URLs that parse
	}
	u.User = nil
	return u.String()
}

func truncate(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n]) + "…"
}
