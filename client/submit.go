package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/events"
)

// Submission is a workflow to start: a query the orchestrator plans, an
// explicit plan, or both (the plan wins; the query is kept for context).
// It is POST /v1/workflows's body.
type Submission = api.SubmitRequest

// Submitted is the gateway's answer to a submission: the workflow's id,
// its tenant, whether an orchestrator recorded it ("accepted") or not
// yet ("queued"), and where to follow it.
type Submitted = api.SubmitResponse

// SubmitOption adjusts one Submit.
type SubmitOption func(*submitOptions)

type submitOptions struct {
	key string
}

// WithIdempotencyKey makes a submission idempotent under key (api's
// IdempotencyKeyRule: up to 255 of A-Z a-z 0-9 . _ ~ : + / = -): every
// Submit of the tenant with the same key and the same submission within
// 24 hours answers with the workflow the first one started, Replayed set
// on the others — from any process, and concurrently too. The same key
// with another submission is an *APIError 409 idempotency_key_reused
// naming the key. Over HTTP the key is the Idempotency-Key header; over
// NATS (NewNATS) the client records it itself in the bucket
// AGENTBUS_IDEMPOTENCY, as the gateway does, so both share the keys.
func WithIdempotencyKey(key string) SubmitOption {
	return func(o *submitOptions) { o.key = key }
}

// Submit starts a workflow. The answer comes once an orchestrator
// recorded it (or after the gateway's accept timeout, status "queued");
// a refused submission is an *APIError naming each problem by JSON
// pointer, and one over a tenant's quota an *APIError 429
// quota_exceeded naming the quota (Quota) and when to try again
// (RetryAfter).
//
// A submission is idempotent: without a WorkflowID the client picks one
// (a UUIDv7) before the first try, and a gateway that answers 503 (its
// stream had no leader for longer than its store timeout) is asked again with the same id, honouring Retry-After,
// until ctx ends or Config.SubmitRetry has passed. A 409 "exists" on such
// a retry means an earlier try was stored: it is the answer, not an error.
// With WithIdempotencyKey the key does that instead: the gateway picks the
// id, and a retry is answered with the workflow of the first try.
func (c *Client) Submit(ctx context.Context, s Submission, opts ...SubmitOption) (Submitted, error) {
	var o submitOptions
	for _, f := range opts {
		f(&o)
	}
	if o.key != "" {
		if err := api.ValidIdempotencyKey(o.key); err != nil {
			return Submitted{}, fmt.Errorf("client: %w", err)
		}
	}
	if c.nc != nil {
		return c.nc.submit(ctx, s, nil, o.key)
	}
	var header http.Header
	if o.key != "" {
		header = http.Header{api.IdempotencyHeader: {o.key}}
	} else if s.WorkflowID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return Submitted{}, fmt.Errorf("client: %w", err)
		}
		s.WorkflowID = id.String()
	}
	var out Submitted
	retried, err := c.retry(ctx, func() error {
		h, err := c.callWith(ctx, http.MethodPost, "/v1/workflows", header, s, http.StatusAccepted, &out)
		out.Replayed = err == nil && h.Get(api.ReplayedHeader) == "true"
		return err
	})
	var ae *APIError
	if retried && o.key == "" && errors.As(err, &ae) && ae.StatusCode == http.StatusConflict && ae.Code == "exists" {
		base := "/v1/workflows/" + url.PathEscape(s.WorkflowID)
		return Submitted{WorkflowID: s.WorkflowID, TenantID: c.cfg.Tenant, Status: api.StatusAccepted,
			EventsURL: base + "/events", StateURL: base}, nil
	}
	return out, err
}

// Ask submits a bare query: Submit with only Query set.
func (c *Client) Ask(ctx context.Context, query string) (Submitted, error) {
	return c.Submit(ctx, Submission{Query: query})
}

// Fork starts a new workflow from a kept checkpoint revision of another
// (see Checkpoints): its plan, and the outputs of the steps completed by
// then, which do not run again. newID may be empty (the gateway picks).
func (c *Client) Fork(ctx context.Context, workflow string, revision uint64, newID string) (Submitted, error) {
	if c.nc != nil {
		if _, err := c.nc.checkpoint(ctx, workflow); err != nil {
			return Submitted{}, err
		}
		return c.nc.submit(ctx, Submission{WorkflowID: newID}, &events.ForkOf{WorkflowID: workflow, Revision: revision}, "")
	}
	var out Submitted
	err := c.call(ctx, http.MethodPost, "/v1/workflows/"+url.PathEscape(workflow)+"/fork",
		api.ForkRequest{Revision: revision, WorkflowID: newID}, http.StatusAccepted, &out)
	return out, err
}
