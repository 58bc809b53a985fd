package client

import (
	"context"
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
