package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

// ClientFrame is a frame a WebSocket client sends: {"type":"cancel",
// "reason":…} or {"type":"approve","approve":true|false,"comment":…,
// "step_id":…}. Beside type, the fields are those of the REST control body
// and are validated by the same schema (control.request).
type ClientFrame struct {
	Type string `json:"type"`
	ControlRequest
}

// WSControlResult is the data of a control_result frame: the
// orchestrator's answer, or Error ("unavailable", "not_found",
// "control_failed") when there was none; Applied is then false.
type WSControlResult struct {
	events.ControlResult
	Error string `json:"error,omitempty"`
}

// controlTimeout bounds one control request, as for POST …/cancel.
const controlTimeout = 10 * time.Second

// decodeClientFrame parses and validates one client frame. On failure it
// returns the problems, each with a JSON pointer into the frame ("" for
// the frame as a whole); it never panics.
func decodeClientFrame(b []byte) (ClientFrame, []schemas.Problem) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		msg := "want a JSON object"
		if err != nil {
			msg += ": " + err.Error()
		}
		return ClientFrame{}, []schemas.Problem{{Pointer: "", Message: msg}}
	}
	t, ok := raw["type"]
	if !ok {
		return ClientFrame{}, []schemas.Problem{{Pointer: "/type", Message: "required property is missing"}}
	}
	var f ClientFrame
	if err := json.Unmarshal(t, &f.Type); err != nil {
		return ClientFrame{}, []schemas.Problem{{Pointer: "/type", Message: "want a string"}}
	}
	if f.Type != events.ActionCancel && f.Type != events.ActionApprove {
		return ClientFrame{}, []schemas.Problem{{Pointer: "/type", Message: `want "cancel" or "approve"`}}
	}
	delete(raw, "type")
	rest, err := json.Marshal(raw)
	if err != nil {
		return ClientFrame{}, []schemas.Problem{{Pointer: "", Message: err.Error()}}
	}
	if err := schemas.Validate(schemas.ControlRequest, rest); err != nil {
		var ve *schemas.ValidationError
		if errors.As(err, &ve) {
			return ClientFrame{}, ve.Problems
		}
		return ClientFrame{}, []schemas.Problem{{Pointer: "", Message: err.Error()}}
	}
	if err := json.Unmarshal(rest, &f.ControlRequest); err != nil {
		return ClientFrame{}, []schemas.Problem{{Pointer: "", Message: err.Error()}}
	}
	return f, nil
}

// applyControl sends a client's control frame to the orchestrators over the
// workflow's control subject, as POST …/cancel and …/approve do, and returns
// the answer for a control_result frame.
func (g *Gateway) applyControl(ctx context.Context, tenant, workflow string, f ClientFrame) WSControlResult {
	fail := func(code, msg string) WSControlResult {
		return WSControlResult{ControlResult: events.ControlResult{WorkflowID: workflow, Message: msg}, Error: code}
	}
	c := events.Control{Action: f.Type, Reason: f.Reason, StepID: f.StepID}
	if f.Comment != "" {
		c.Reason = f.Comment
	}
	if f.Type == events.ActionApprove && f.Approve != nil && !*f.Approve {
		c.Action = events.ActionReject
	}
	subj, err := subjects.Control(tenant, workflow)
	if err != nil {
		return fail("internal", err.Error())
	}
	env, err := events.New(events.TypeControl, newWorkflowID(), events.SourceGateway, tenant, workflow, c.StepID, c)
	if err != nil {
		return fail("internal", err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	out, err := g.bus.Request(ctx, subj, env)
	if err != nil {
		if errors.Is(err, bus.ErrNoResponder) {
			return fail("unavailable", "no orchestrator answered: "+err.Error())
		}
		return fail("unavailable", err.Error())
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(out, &e) == nil && e.Error != "" {
		if strings.Contains(e.Error, "no such workflow") {
			return fail("not_found", e.Error)
		}
		return fail("control_failed", e.Error)
	}
	var res events.ControlResult
	if err := json.Unmarshal(out, &res); err != nil {
		return fail("control_failed", "bad answer from the orchestrator")
	}
	return WSControlResult{ControlResult: res}
}
