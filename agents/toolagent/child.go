package toolagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// Metadata keys of a child workflow: the workflow, step and tool call it
// runs for.
const (
	MetadataParentWorkflow = "parent_workflow"
	MetadataParentStep     = "parent_step"
	MetadataToolCall       = "tool_call"
)

// ChildStep is the id of a child workflow's one step.
const ChildStep = "call"

// source is the CloudEvent source of the agent's submissions.
const source = "/agentbus/agents/" + Capability

// outcome is how a child workflow ended: its result, or why it has none.
type outcome struct {
	workflow string
	result   json.RawMessage
	state    events.State
	err      string
}

// childID is the child workflow of a tool call: the same for the same
// call (tool and arguments) at the same place of the same step attempt,
// so that a run of the step redelivered after a crash follows the child
// it had started rather than run the tool again.
func childID(req agents.Request, iteration, call int, tool, args string) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%d\x00%d\x00%d\x00%s\x00%s", req.TenantID, req.WorkflowID, req.StepID, req.Attempt, iteration, call, tool, args))
	return "tc-" + hex.EncodeToString(h[:16])
}

// run submits a tool call as a child workflow and follows it to its end,
// telling emit what happens; when ctx ends first the child is canceled.
func (a *Agent) run(ctx context.Context, req agents.Request, emit agents.Emitter, wf, tool string, args json.RawMessage, callID string) outcome {
	out := outcome{workflow: wf}
	sub := events.WorkflowSubmitted{
		Query: fmt.Sprintf("tool call %s of step %s (workflow %s)", tool, req.StepID, req.WorkflowID),
		Plan:  &events.Plan{Steps: []events.PlanStep{{ID: ChildStep, Capability: tool, Input: args}}},
		Metadata: map[string]string{MetadataParentWorkflow: req.WorkflowID, MetadataParentStep: req.StepID,
			MetadataToolCall: callID},
		User: req.User, Role: req.Role,
	}
	if dl, ok := ctx.Deadline(); ok {
		sub.TimeoutMS = max(time.Until(dl).Milliseconds(), 1)
	}
	if _, err := api.Submit(ctx, a.cfg.Bus, source, req.TenantID, wf, sub); err != nil {
		out.state, out.err = events.StateFailed, "could not submit: "+err.Error()
		return out
	}
	err := a.cfg.Bus.Follow(ctx, req.TenantID, wf, 0, func(ctx context.Context, r bus.Record) error {
		switch r.Envelope.Type {
		case events.TypeComplete:
			var c events.Complete
			if err := r.Envelope.Unmarshal(&c); err != nil {
				return err
			}
			out.state, out.result = events.StateCompleted, c.Result
			return bus.ErrStop
		case events.TypeError:
			var e events.Error
			_ = r.Envelope.Unmarshal(&e)
			out.state, out.err = events.StateFailed, e.Message
			return bus.ErrStop
		case events.TypeCancelled:
			var c events.Cancelled
			_ = r.Envelope.Unmarshal(&c)
			out.state, out.err = events.StateCanceled, "canceled: "+c.Reason
			return bus.ErrStop
		case events.TypeStatus:
			var st events.Status
			if r.Envelope.Unmarshal(&st) == nil && st.Confirm != nil {
				_ = emit.Progress(ctx, 0, fmt.Sprintf("tool call %s waits for a confirmation in workflow %s (%s): approve or reject it there", tool, wf, st.Confirm.Rule))
			}
		}
		return nil
	})
	if err == nil || out.state != "" {
		return out
	}
	// The step ended (canceled, out of time) while the child ran: it is
	// canceled too, with a context of its own since ctx is done.
	reason := "the agent step that called it ended: " + context.Cause(ctx).Error()
	if cerr := a.cancel(req.TenantID, wf, reason); cerr != nil {
		a.log.Warn("could not cancel a tool call's workflow", "workflow", wf, "err", cerr)
	}
	out.state, out.err = events.StateCanceled, reason
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		out.state, out.err = events.StateFailed, "following it: "+err.Error()
	}
	return out
}

// cancelTimeout bounds the cancel of a child workflow.
const cancelTimeout = 10 * time.Second

// cancel asks the orchestrators to cancel workflow wf, as the gateway's
// cancel does: a request on its control subject.
func (a *Agent) cancel(tenant, wf, reason string) error {
	subj, err := subjects.Control(tenant, wf)
	if err != nil {
		return err
	}
	env, err := events.New(events.TypeControl, "cancel-"+wf, source, tenant, wf, "", events.Control{Action: events.ActionCancel, Reason: reason})
	if err != nil {
		return err
	}
	ctx, stop := context.WithTimeout(context.Background(), cancelTimeout)
	defer stop()
	_, err = a.cfg.Bus.Request(ctx, subj, env)
	return err
}
