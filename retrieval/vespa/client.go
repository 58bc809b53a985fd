package vespa

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// maxBody bounds how much of a response is read: Vespa's answers to what
// this package asks are small (hits are capped by the query's K).
const maxBody = 64 << 20

// reply is one HTTP exchange's outcome.
type reply struct {
	status int
	body   []byte
}

// do sends one request, retrying 429 and 503 with exponential backoff and
// jitter (honouring Retry-After when Vespa sends one). Each attempt is
// bounded by Config.Timeout. A transport error is returned as is; any HTTP
// status is returned as a reply for the caller to interpret.
func (b *Backend) do(ctx context.Context, method, rawURL string, body []byte) (reply, error) {
	for attempt := 0; ; attempt++ {
		r, retryAfter, err := b.once(ctx, method, rawURL, body)
		if err != nil {
			return reply{}, err
		}
		if (r.status != http.StatusTooManyRequests && r.status != http.StatusServiceUnavailable) || attempt >= b.cfg.MaxRetries {
			return r, nil
		}
		delay := b.backoff(attempt)
		if retryAfter > 0 {
			delay = min(retryAfter, 32*b.cfg.RetryBackoff)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return reply{}, ctx.Err()
		case <-t.C:
		}
	}
}

func (b *Backend) once(ctx context.Context, method, rawURL string, body []byte) (reply, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, rawURL, bytes.NewReader(body))
	if err != nil {
		return reply{}, 0, fmt.Errorf("%s %s: %w", method, rawURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := b.cfg.HTTPClient.Do(req)
	if err != nil {
		return reply{}, 0, fmt.Errorf("%s %s: %w", method, req.URL.Redacted(), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return reply{}, 0, fmt.Errorf("%s %s: reading the response: %w", method, req.URL.Redacted(), err)
	}
	var retryAfter time.Duration
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	return reply{status: resp.StatusCode, body: data}, retryAfter, nil
}

// backoff is the delay before retry attempt+1: RetryBackoff·2^attempt,
// capped at 32·RetryBackoff, times a jitter in [0.5, 1.5).
func (b *Backend) backoff(attempt int) time.Duration {
	d := b.cfg.RetryBackoff << min(attempt, 5)
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}

// snippet is the start of a body, for an error message when Vespa's
// answer is not the JSON it documents.
func snippet(body []byte) string {
	const n = 200
	s := string(bytes.TrimSpace(body))
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
