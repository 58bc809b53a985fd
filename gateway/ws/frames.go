package ws

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

// Frame types only the WebSocket sends (the gateway's connected and reset
// open every stream). Their offset is 0: they are not stored events and
// never a resume point.
const (
	// FrameControlResult answers a client's cancel or approve frame; data is
	// ControlResult.
	FrameControlResult = "control_result"
	// FrameClientError answers a malformed client frame; data is the
	// gateway's error body with JSON pointers. It is not the terminal
	// `error` event: the stream goes on.
	FrameClientError = "frame_error"
)

// clientFrame is a frame a WebSocket client sends: {"type":"cancel",
// "reason":…} or {"type":"approve","approve":true|false,"comment":…,
// "step_id":…}. Beside type, the fields are those of the REST control body
// (gateway.ControlRequest) and are validated by the same schema
// (control.request).
type clientFrame struct {
	Type string `json:"type"`
	controlRequest
}

// controlRequest is the REST control body (api.ControlRequest), as a
// client frame carries its fields.
type controlRequest = api.ControlRequest

// ControlResult is the data of a control_result frame: the
// orchestrator's answer, or Error ("unavailable", "not_found",
// "control_failed", "forbidden") when there was none; Applied is then
// false. It is a plain value.
type ControlResult struct {
	events.ControlResult
	Error string `json:"error,omitempty"`
}

// controlTimeout bounds one control request, as for POST …/cancel.
const controlTimeout = 10 * time.Second

// decodeClientFrame parses and validates one client frame. On failure it
// returns the problems, each with a JSON pointer into the frame ("" for
// the frame as a whole); it never panics.
func decodeClientFrame(b []byte) (clientFrame, []schemas.Problem) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw == nil {
		msg := "want a JSON object"
		if err != nil {
			msg += ": " + err.Error()
		}
		return clientFrame{}, []schemas.Problem{{Pointer: "", Message: msg}}
	}
	t, ok := raw["type"]
	if !ok {
		return clientFrame{}, []schemas.Problem{{Pointer: "/type", Message: "required property is missing"}}
	}
	var f clientFrame
	if err := json.Unmarshal(t, &f.Type); err != nil {
		return clientFrame{}, []schemas.Problem{{Pointer: "/type", Message: "want a string"}}
	}
	if f.Type != events.ActionCancel && f.Type != events.ActionApprove {
		return clientFrame{}, []schemas.Problem{{Pointer: "/type", Message: `want "cancel" or "approve"`}}
	}
	delete(raw, "type")
	rest, err := json.Marshal(raw)
	if err != nil {
		return clientFrame{}, []schemas.Problem{{Pointer: "", Message: err.Error()}}
	}
	if err := schemas.Validate(schemas.ControlRequest, rest); err != nil {
		var ve *schemas.ValidationError
		if errors.As(err, &ve) {
			return clientFrame{}, ve.Problems
		}
		return clientFrame{}, []schemas.Problem{{Pointer: "", Message: err.Error()}}
	}
	if err := json.Unmarshal(rest, &f.controlRequest); err != nil {
		return clientFrame{}, []schemas.Problem{{Pointer: "", Message: err.Error()}}
	}
	return f, nil
}

// applyControl sends a client's control frame to the orchestrators over the
// workflow's control subject, as POST …/cancel and …/approve do, and returns
// the answer for a control_result frame.
func (s *Server) applyControl(ctx context.Context, tenant, workflow string, f clientFrame) ControlResult {
	fail := func(code, msg string) ControlResult {
		return ControlResult{ControlResult: events.ControlResult{WorkflowID: workflow, Message: msg}, Error: code}
	}
	c := f.controlRequest.Control(f.Type)
	subj, err := subjects.Control(tenant, workflow)
	if err != nil {
		return fail("internal", err.Error())
	}
	env, err := events.New(events.TypeControl, newID(), events.SourceGateway, tenant, workflow, c.StepID, c)
	if err != nil {
		return fail("internal", err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	out, err := s.bus.Request(ctx, subj, env)
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
	return ControlResult{ControlResult: res}
}

// newID returns a time-ordered UUID (v7), as the gateway's ids are.
func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
