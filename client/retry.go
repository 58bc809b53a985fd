package client

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// retry calls try until it succeeds or fails with something other than a
// 503, waiting the answer's Retry-After (or a
// backoff) in between, for at most Config.SubmitRetry and while ctx lasts.
// It reports whether it tried more than once.
func (c *Client) retry(ctx context.Context, try func() error) (retried bool, err error) {
	until := time.Now().Add(c.cfg.SubmitRetry)
	backoff := 250 * time.Millisecond
	for n := 0; ; n++ {
		err = try()
		wait, again := retryable(err)
		if !again || c.cfg.SubmitRetry < 0 || ctx.Err() != nil {
			return n > 0, err
		}
		if wait == 0 {
			wait, backoff = backoff, min(2*backoff, 2*time.Second)
		}
		if time.Now().Add(wait).After(until) {
			return n > 0, err
		}
		select {
		case <-ctx.Done():
			return n > 0, err
		case <-time.After(wait):
		}
	}
}

// retryable says whether err is worth sending the same request again for,
// and how long the gateway asked to wait (0: not said).
func retryable(err error) (time.Duration, bool) {
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	if s, err := strconv.Atoi(ae.RetryAfter); err == nil && s >= 0 {
		return min(time.Duration(s)*time.Second, 10*time.Second), true
	}
	return 0, true
}
