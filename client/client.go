package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentbus/agentbus/api"
)

// Sentinel errors.
var (
	// ErrConfig: the Config is not usable.
	ErrConfig = errors.New("client: invalid config")
	// ErrNotFound: the gateway knows no such workflow (or session, or
	// document) for the tenant.
	ErrNotFound = errors.New("client: not found")
	// ErrUnreachable: the gateway could not be reached.
	ErrUnreachable = errors.New("client: gateway unreachable")
)

// Config says which gateway to talk to and as whom. URL is required;
// the zero value of every other field means its default.
type Config struct {
	// URL is the gateway's base URL, e.g. "http://127.0.0.1:8080".
	URL string
	// Tenant is sent as X-Agentbus-Tenant: the tenant with auth off, or
	// the one an admin token acts on; a client token's own tenant wins.
	// Default "default".
	Tenant string
	// Token is sent as "Authorization: Bearer <token>" when set.
	Token string
	// User is sent as X-Agentbus-User when set (admin tokens, or auth off).
	User string
	// HTTPClient sends the requests; default a new http.Client (no
	// timeout: an event stream lasts as long as its workflow).
	HTTPClient *http.Client
	// NotFoundGrace is how long Follow keeps asking about a workflow the
	// gateway does not know yet — a just-submitted one has no state until
	// an orchestrator takes it. Default 10s; negative: a 404 ends Follow
	// at once.
	NotFoundGrace time.Duration
	// MaxRetries bounds Follow's reconnects in a row that get nowhere
	// (no frame in between); default 20.
	MaxRetries int
	// SubmitRetry is how long Submit and the control actions go on asking
	// a gateway that answers 503 (a stream electing a leader outlasted its
	// store timeout), with the same workflow id;
	// default 60s, negative: never.
	SubmitRetry time.Duration
}

func (c *Config) setDefaults() {
	c.URL = strings.TrimRight(c.URL, "/")
	c.Tenant = cmp.Or(c.Tenant, api.DefaultTenant)
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.NotFoundGrace == 0 {
		c.NotFoundGrace = 10 * time.Second
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 20
	}
	if c.SubmitRetry == 0 {
		c.SubmitRetry = 60 * time.Second
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if u, err := url.Parse(c.URL); c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("%w: URL %q is not an http(s) URL", ErrConfig, c.URL))
	}
	if c.MaxRetries < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxRetries %d is negative", ErrConfig, c.MaxRetries))
	}
	return errors.Join(errs...)
}

// Client talks to one gateway. It is safe for concurrent use.
type Client struct {
	cfg Config
	// nc, when set, is NATS instead of a gateway (NewNATS).
	nc *natsClient
}

// New checks cfg and makes a Client.
func New(cfg Config) (*Client, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Client{cfg: cfg}, nil
}

// Close releases what a NATS client opened (its discovery registry); the
// bus connection stays the caller's. An HTTP client holds nothing. Safe
// to call twice.
func (c *Client) Close() error {
	if c.nc == nil {
		return nil
	}
	c.nc.regMu.Lock()
	defer c.nc.regMu.Unlock()
	if c.nc.reg != nil {
		c.nc.reg.Close()
		c.nc.reg = nil
	}
	return nil
}

// URL is the gateway's base URL ("" for a NATS client).
func (c *Client) URL() string { return c.cfg.URL }

// Tenant is the tenant the client names.
func (c *Client) Tenant() string { return c.cfg.Tenant }

// Do sends one request to the gateway with the client's tenant, user and
// token, a JSON body when body is not nil, and returns the response as
// it is: the escape hatch for endpoints without a method here. path
// starts with "/".
func (c *Client) Do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	return c.do(ctx, method, path, body, nil)
}

// do is Do with more request headers (nil for none).
func (c *Client) do(ctx context.Context, method, path string, body []byte, header http.Header) (*http.Response, error) {
	if c.nc != nil {
		return nil, ErrNoHTTP
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.cfg.URL+path, rd)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(api.TenantHeader, c.cfg.Tenant)
	if c.cfg.User != "" {
		req.Header.Set(api.UserHeader, c.cfg.User)
	}
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: cannot reach agentbus at %s: %w", ErrUnreachable, c.cfg.URL, err)
	}
	return resp, nil
}

// call sends a request and decodes a JSON answer of status want into out
// (out may be nil); any other status is an *APIError.
func (c *Client) call(ctx context.Context, method, path string, in any, want int, out any) error {
	_, err := c.callWith(ctx, method, path, nil, in, want, out)
	return err
}

// callWith is call with more request headers; it returns the answer's
// headers.
func (c *Client) callWith(ctx context.Context, method, path string, header http.Header, in any, want int, out any) (http.Header, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
	}
	resp, err := c.do(ctx, method, path, body, header)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return resp.Header, ReadError(resp)
	}
	if out == nil {
		return resp.Header, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp.Header, fmt.Errorf("client: reading the answer to %s %s: %w", method, path, err)
	}
	return resp.Header, nil
}

// APIError is an error answer from the gateway: its HTTP status, code,
// message, and each problem with where it is.
type APIError struct {
	StatusCode int
	Status     string
	Code       string
	Message    string
	Problems   []api.Problem
	// RetryAfter is the answer's Retry-After header, if any.
	RetryAfter string
	// Quota is the quota a 429 quota_exceeded answer names: which, its
	// limit and the tenant's current value.
	Quota *api.Quota
}

// Error reads "404 Not Found: workflow … not found", then each problem
// on a line of its own with where it is ("/plan/steps/0: …").
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Status, e.Message)
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "\n  %s", problemText(p))
	}
	return b.String()
}

// problemText is a problem with where it is, or its message alone when
// it says nowhere.
func problemText(p api.Problem) string {
	if p.In == "" && p.Pointer == "" && p.Name == "" {
		return p.Message
	}
	return p.String()
}

// Is makes errors.Is(err, ErrNotFound) true for a 404.
func (e *APIError) Is(target error) bool {
	return target == ErrNotFound && e.StatusCode == http.StatusNotFound
}

// ReadError reads an error answer into an *APIError: the gateway's
// {"error": {code, message, problems}}, the {"errors": [{in, name,
// message}]} of a refused query parameter, or the body's text.
func ReadError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &APIError{StatusCode: resp.StatusCode, Status: resp.Status, RetryAfter: resp.Header.Get("Retry-After")}
	var one api.ErrorResponse
	var many struct {
		Errors []api.Problem `json:"errors"`
	}
	switch {
	case json.Unmarshal(body, &one) == nil && one.Error.Message != "":
		e.Code, e.Message, e.Problems, e.Quota = one.Error.Code, one.Error.Message, one.Error.Problems, one.Error.Quota
	case json.Unmarshal(body, &many) == nil && len(many.Errors) > 0:
		parts := make([]string, 0, len(many.Errors))
		for _, p := range many.Errors {
			parts = append(parts, problemText(p))
		}
		e.Message = strings.Join(parts, "; ")
	default:
		e.Message = strings.TrimSpace(string(body))
	}
	return e
}
