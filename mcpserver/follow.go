package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
)

// follow follows a workflow from its start to its end, sending the
// caller a progress notification per event when its request carries a
// progress token (progress counts the events; the total is unknown), and
// returns how it ended. A workflow that failed, was rejected or canceled
// is an Outcome too, not an error: it is an answer about the workflow.
func follow(ctx context.Context, req *mcp.CallToolRequest, c *client.Client, workflow string) (Outcome, error) {
	o := Outcome{WorkflowID: workflow}
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	for f, err := range c.Follow(ctx, workflow, 0) {
		if err != nil && !errors.Is(err, client.ErrReset) {
			return o, err
		}
		o.Events++
		if token != nil && req.Session != nil {
			// A lost notification costs the caller one line of progress,
			// not the outcome: go on.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(o.Events), Message: describe(f)})
		}
		switch f.Type {
		case events.TypeComplete.Short():
			o.Status = string(events.StateCompleted)
			raw, err := result(ctx, c, workflow, f)
			if err != nil {
				return o, err
			}
			o.Result = raw
			return o, nil
		case events.TypeError.Short():
			var e events.Error
			_ = json.Unmarshal(f.Data, &e)
			o.Status, o.Error, o.StepID = string(events.StateFailed), e.Message, e.StepID
			if e.Code != "" {
				o.Error = e.Code + ": " + e.Message
			}
			if st, err := c.State(ctx, workflow); err == nil && st.Status.Terminal() {
				o.Status = string(st.Status) // failed or rejected
			}
			return o, nil
		case events.TypeCancelled.Short():
			var cc events.Cancelled
			_ = json.Unmarshal(f.Data, &cc)
			o.Status, o.Error = string(events.StateCanceled), cc.Reason
			return o, nil
		}
	}
	return o, errors.New("the events ended without a terminal event")
}

// result is a complete frame's result, or the workflow's state's when
// the frame was made from the state (following resumed past the end).
func result(ctx context.Context, c *client.Client, workflow string, f client.Frame) (json.RawMessage, error) {
	if len(f.Data) > 0 {
		var r events.Complete
		if err := json.Unmarshal(f.Data, &r); err != nil {
			return nil, fmt.Errorf("reading the result: %w", err)
		}
		return r.Result, nil
	}
	st, err := c.State(ctx, workflow)
	if err != nil {
		return nil, err
	}
	return st.Result, nil
}

// describe is a frame as one line of progress: "step a: completed",
// "step s: 40% sleeping 500 ms", "artifact a.output (step a)".
func describe(f client.Frame) string {
	p, err := client.Payload(f)
	if err != nil {
		return f.Type
	}
	var b strings.Builder
	switch v := p.(type) {
	case events.Status:
		if v.StepID != "" {
			fmt.Fprintf(&b, "step %s: ", v.StepID)
		} else {
			b.WriteString("workflow: ")
		}
		b.WriteString(string(v.State))
		if v.Message != "" {
			b.WriteString(" — " + v.Message)
		}
		if v.Artifact != nil {
			fmt.Fprintf(&b, " (artifact %s)", v.Artifact.ArtifactID)
		}
	case events.Progress:
		if v.StepID != "" {
			fmt.Fprintf(&b, "step %s: ", v.StepID)
		}
		fmt.Fprintf(&b, "%d/%d steps", v.CompletedSteps, v.TotalSteps)
		if v.Message != "" {
			b.WriteString(" — " + v.Message)
		}
	case events.Artifact:
		fmt.Fprintf(&b, "artifact %s", v.ArtifactID)
		if v.StepID != "" {
			fmt.Fprintf(&b, " (step %s)", v.StepID)
		}
	case events.Complete:
		fmt.Fprintf(&b, "completed in %.0f ms", v.DurationMS)
	case events.Error:
		fmt.Fprintf(&b, "failed: %s: %s", v.Code, v.Message)
	case events.Cancelled:
		b.WriteString("canceled")
		if v.Reason != "" {
			b.WriteString(": " + v.Reason)
		}
	case *client.ResetError:
		fmt.Fprintf(&b, "events before offset %d are gone (%s); going on from the workflow's state", v.ResumeFrom, v.Reason)
	default:
		b.WriteString(f.Type)
	}
	return b.String()
}
