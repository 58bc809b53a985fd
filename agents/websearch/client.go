package websearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxResponse bounds a provider's answer: raw page contents of a few
// dozen results fit well within it.
const maxResponse = 16 << 20

// Retry bounds how a rate-limited (429) request is retried before the
// step fails (as retriable: the worker's own backoff takes over).
type Retry struct {
	// Attempts is how many times a request is sent at most; default 3.
	Attempts int
	// Base is the wait before the first retry when the provider names
	// none (no Retry-After), doubling each time; default 500ms.
	Base time.Duration
	// MaxWait caps any one wait, the provider's Retry-After included;
	// default 10s. A Retry-After beyond it ends the retries at once.
	MaxWait time.Duration
}

func (r *Retry) setDefaults() {
	if r.Attempts == 0 {
		r.Attempts = 3
	}
	if r.Base == 0 {
		r.Base = 500 * time.Millisecond
	}
	if r.MaxWait == 0 {
		r.MaxWait = 10 * time.Second
	}
}

func (r Retry) validate() error {
	if r.Attempts < 1 || r.Base <= 0 || r.MaxWait < r.Base {
		return fmt.Errorf("websearch: retry attempts %d, base %s, max wait %s: want attempts >= 1 and 0 < base <= max wait", r.Attempts, r.Base, r.MaxWait)
	}
	return nil
}

// client sends one provider's requests. It is safe for concurrent use.
type client struct {
	cfg ProviderConfig
}

// do sends the request build makes (anew for every attempt) and decodes a
// 2xx JSON answer into out. A 429 is retried within cfg.Retry; other
// failures return at once.
func (c *client) do(ctx context.Context, build func(ctx context.Context) (*http.Request, error), out any) error {
	var last *ProviderError
	for attempt := 1; attempt <= c.cfg.Retry.Attempts; attempt++ {
		req, err := build(ctx)
		if err != nil {
			return fmt.Errorf("websearch: %s request: %w", c.cfg.Name, err)
		}
		req.Header.Set("User-Agent", c.cfg.UserAgent)
		req.Header.Set("Accept", "application/json")
		resp, err := c.cfg.HTTP.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("websearch: %s unreachable: %w", c.cfg.Name, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
		_ = resp.Body.Close()
		if err != nil {
			return fmt.Errorf("websearch: %s: reading the answer: %w", c.cfg.Name, err)
		}
		if resp.StatusCode/100 == 2 {
			if len(body) > maxResponse {
				return fmt.Errorf("websearch: %s: answer larger than %d bytes", c.cfg.Name, maxResponse)
			}
			if err := json.Unmarshal(body, out); err != nil {
				return &ProviderError{Provider: c.cfg.Name, Status: http.StatusBadGateway, Body: "answer is not the documented JSON: " + err.Error()}
			}
			return nil
		}
		last = &ProviderError{Provider: c.cfg.Name, Status: resp.StatusCode, KeyEnv: KeyEnv(c.cfg.Name), Body: excerpt(body)}
		if resp.StatusCode != http.StatusTooManyRequests {
			return last
		}
		last.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		if attempt == c.cfg.Retry.Attempts {
			break
		}
		wait := last.RetryAfter
		if wait <= 0 {
			wait = c.cfg.Retry.Base << (attempt - 1)
		}
		if wait > c.cfg.Retry.MaxWait {
			break // longer than we may hold the step: let the worker retry later
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return last
}

// retryAfter parses a Retry-After header: delay seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// excerpt is the start of an error answer, for messages: a JSON
// "detail"/"error"/"message" when there is one, else the text.
func excerpt(body []byte) string {
	var e struct {
		Detail  any    `json:"detail"`
		Error   any    `json:"error"`
		Message string `json:"message"`
	}
	s := ""
	if json.Unmarshal(body, &e) == nil {
		for _, v := range []any{e.Detail, e.Error, e.Message} {
			switch x := v.(type) {
			case string:
				s = x
			case map[string]any:
				if d, ok := x["error"].(string); ok {
					s = d
				} else if d, ok := x["detail"].(string); ok {
					s = d
				}
			}
			if s != "" {
				break
			}
		}
	}
	if s == "" {
		s = string(bytes.TrimSpace(body))
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

// jsonRequest builds a POST of body as JSON to path.
func (c *client) jsonRequest(path string, body any, header map[string]string) func(context.Context) (*http.Request, error) {
	b, err := json.Marshal(body)
	return func(ctx context.Context) (*http.Request, error) {
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BaseURL+path, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		return req, nil
	}
}

// getRequest builds a GET of path with the encoded query.
func (c *client) getRequest(path, query string, header map[string]string) func(context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.BaseURL+path+"?"+query, nil)
		if err != nil {
			return nil, err
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		return req, nil
	}
}

var errNoQuery = errors.New("websearch: empty query")
