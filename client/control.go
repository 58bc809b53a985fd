package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/events"
)

// ControlResult is the orchestrator's answer to a control action: the
// workflow's status after it, whether it applied, and why not.
type ControlResult = events.ControlResult

// Cancel cancels a running workflow: its running steps' contexts end and
// no step of it runs again. An action that no longer applies (the
// workflow ended) is an *APIError with status 409.
func (c *Client) Cancel(ctx context.Context, workflow, reason string) (ControlResult, error) {
	return c.control(ctx, workflow, events.ActionCancel, api.ControlRequest{Reason: reason})
}

// Resume runs a failed workflow's failed steps again; completed steps
// keep their outputs.
func (c *Client) Resume(ctx context.Context, workflow string) (ControlResult, error) {
	return c.control(ctx, workflow, events.ActionResume, api.ControlRequest{})
}

// Approve approves the step awaiting a decision (step "" means every
// step that awaits one), with a comment for the record.
func (c *Client) Approve(ctx context.Context, workflow, step, comment string) (ControlResult, error) {
	yes := true
	return c.control(ctx, workflow, events.ActionApprove, api.ControlRequest{Approve: &yes, StepID: step, Comment: comment})
}

// Reject rejects the step awaiting a decision: the workflow ends
// rejected.
func (c *Client) Reject(ctx context.Context, workflow, step, comment string) (ControlResult, error) {
	no := false
	return c.control(ctx, workflow, events.ActionApprove, api.ControlRequest{Approve: &no, StepID: step, Comment: comment})
}

func (c *Client) control(ctx context.Context, workflow, action string, req api.ControlRequest) (ControlResult, error) {
	if c.nc != nil {
		return c.nc.control(ctx, workflow, req.Control(action))
	}
	var out ControlResult
	_, err := c.retry(ctx, func() error {
		return c.call(ctx, http.MethodPost, "/v1/workflows/"+url.PathEscape(workflow)+"/"+action, req, http.StatusOK, &out)
	})
	return out, err
}

// Signal sends the workflow signal name with data (any JSON; nil is
// null): the wait step waiting for it completes with data as its output,
// or, if none waits yet, the workflow keeps it for the one that will. A
// workflow that ended answers an *APIError with status 409.
func (c *Client) Signal(ctx context.Context, workflow, name string, data json.RawMessage) (ControlResult, error) {
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	if c.nc != nil {
		return c.nc.control(ctx, workflow, events.Control{Action: events.ActionSignal, Signal: name, Data: data})
	}
	// Not retried: a signal is not idempotent over HTTP (each request is
	// a new signal), and a second one would be kept for a later wait.
	var out ControlResult
	err := c.call(ctx, http.MethodPost, "/v1/workflows/"+url.PathEscape(workflow)+"/signals/"+url.PathEscape(name), data, http.StatusOK, &out)
	return out, err
}

// Pause stops a workflow dispatching: its running steps finish and are
// recorded, nothing new is dispatched until Unpause.
func (c *Client) Pause(ctx context.Context, workflow, reason string) (ControlResult, error) {
	return c.control(ctx, workflow, events.ActionPause, api.ControlRequest{Reason: reason})
}

// Unpause lets a paused workflow dispatch again.
func (c *Client) Unpause(ctx context.Context, workflow string) (ControlResult, error) {
	return c.control(ctx, workflow, events.ActionUnpause, api.ControlRequest{})
}

// Bulk applies a control action (cancel, pause or unpause) to every
// workflow a filter matches (POST /v1/workflows/bulk). It needs a
// gateway: over NATS it is ErrNoHTTP.
func (c *Client) Bulk(ctx context.Context, req api.BulkRequest) (api.BulkResult, error) {
	var out api.BulkResult
	if c.nc != nil {
		return out, ErrNoHTTP
	}
	err := c.call(ctx, http.MethodPost, "/v1/workflows/bulk", req, http.StatusOK, &out)
	return out, err
}
