package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentbus/agentbus/schemas"
	"github.com/agentbus/agentbus/subjects"
)

// SourceBare is the source given to a control message published with no
// CloudEvent headers (`nats pub agentbus.<t>.control.<wf> '{"action":…}'`).
const SourceBare = "/agentbus/control/bare"

// ControlAnswer is the answer to a control request that was refused: what
// was wrong, and where (a JSON pointer into the body, or a header name).
type ControlAnswer struct {
	Error    string            `json:"error"`
	Problems []schemas.Problem `json:"problems,omitempty"`
	// Unavailable says the refusal comes from a store that had no leader
	// for the moment (a stream electing one after a node loss), not from
	// the request: the same request may be sent again.
	Unavailable bool `json:"unavailable,omitempty"`
}

// ControlError says why a control message was refused: the problems, each
// at a JSON pointer into the body or at a header name. Errors.Is(err,
// ErrMalformed) holds.
type ControlError struct {
	Subject  string
	Problems []schemas.Problem
}

func (e *ControlError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		where := p.Pointer
		if where == "" {
			where = "/"
		}
		parts[i] = where + ": " + p.Message
	}
	return fmt.Sprintf("events: control message on %s refused: %s", e.Subject, strings.Join(parts, "; "))
}

// Unwrap lets errors.Is(err, ErrMalformed) hold.
func (e *ControlError) Unwrap() error { return ErrMalformed }

// DecodeControl reads a message published on a control subject,
// agentbus.<tenant>.control.<workflow>, which names the tenant and the
// workflow and is their authority. Two forms are accepted: the full
// CloudEvent (binary mode, type io.agentbus.workflow.control.v1, whose
// ce-tenantid and ce-workflowid must agree with the subject), and a bare
// JSON body with no ce- headers at all, as natscli or any client sends it —
// the subject supplies what the headers would. Either way the body must be
// a Control ({"action": "cancel"|"resume"|"approve"|"reject"|"signal"|
// "pause"|"unpause", "reason", "step_id", "signal", "data"}). A refusal is a *ControlError naming each problem.
func DecodeControl(subject string, header map[string][]string, data []byte) (Envelope, Control, error) {
	refuse := func(ptr, format string, args ...any) (Envelope, Control, error) {
		return Envelope{}, Control{}, &ControlError{Subject: subject, Problems: []schemas.Problem{{Pointer: ptr, Message: fmt.Sprintf(format, args...)}}}
	}
	p, err := subjects.Parse(subject)
	if err != nil || p.Kind != "control" {
		return refuse("", "%q is not a control subject (agentbus.<tenant>.control.<workflow>)", subject)
	}
	var env Envelope
	if lookup(header, HeaderType) == "" && lookup(header, HeaderSpecVersion) == "" {
		// Bare: the subject is the authority, but a stray ce-tenantid or
		// ce-workflowid that names another tenant or workflow is a mistake
		// the sender must hear about, not one to apply to the subject's.
		if t := lookup(header, HeaderTenant); t != "" && t != p.Tenant {
			return refuse(HeaderTenant, "tenant %q disagrees with the subject's %q", t, p.Tenant)
		}
		if wf := lookup(header, HeaderWorkflow); wf != "" && wf != p.Last {
			return refuse(HeaderWorkflow, "workflow %q disagrees with the subject's %q", wf, p.Last)
		}
		env = Envelope{ID: uuid.NewString(), Source: SourceBare, Type: TypeControl, Time: time.Now().UTC(),
			TenantID: p.Tenant, WorkflowID: p.Last, Data: data}
	} else {
		if env, err = Decode(header, data); err != nil {
			var de *DecodeError
			if errors.As(err, &de) && strings.HasPrefix(de.Where, "data") && Type(lookup(header, HeaderType)) == TypeControl {
				// Sound headers, a bad body: name its problems as for a
				// bare body (an unknown action with the actions to choose).
				if _, probs := decodeControlBody(data); probs != nil {
					return Envelope{}, Control{}, &ControlError{Subject: subject, Problems: probs}
				}
			}
			if errors.As(err, &de) {
				probs := []schemas.Problem{{Pointer: strings.TrimPrefix(de.Where, "data"), Message: de.Reason}}
				for _, p := range de.More {
					probs = append(probs, schemas.Problem{Pointer: strings.TrimPrefix(p.Pointer, "data"), Message: p.Message})
				}
				return Envelope{}, Control{}, &ControlError{Subject: subject, Problems: probs}
			}
			return refuse("", "%v", err)
		}
		switch {
		case env.Type != TypeControl:
			return refuse(HeaderType, "%q on a control subject, want %s (or no ce- headers at all)", env.Type, TypeControl)
		case env.TenantID != p.Tenant:
			return refuse(HeaderTenant, "tenant %q disagrees with the subject's %q", env.TenantID, p.Tenant)
		case env.WorkflowID != "" && env.WorkflowID != p.Last:
			return refuse(HeaderWorkflow, "workflow %q disagrees with the subject's %q", env.WorkflowID, p.Last)
		}
		env.WorkflowID = p.Last
	}
	c, probs := decodeControlBody(data)
	if probs != nil {
		return Envelope{}, Control{}, &ControlError{Subject: subject, Problems: probs}
	}
	if env.StepID == "" {
		env.StepID = c.StepID
	}
	return env, c, nil
}

// decodeControlBody checks a control body against its schema, naming an
// unknown action in words a person can act on.
func decodeControlBody(data []byte) (Control, []schemas.Problem) {
	var c Control
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err == nil {
		var action string
		if json.Unmarshal(raw["action"], &action) == nil && action != "" && !knownAction(action) {
			all := Actions()
			return c, []schemas.Problem{{Pointer: "/action", Message: fmt.Sprintf("unknown action %q: want %s or %s",
				action, strings.Join(all[:len(all)-1], ", "), all[len(all)-1])}}
		}
	}
	if err := schemas.Validate(TypeControl.Schema(), data); err != nil {
		var ve *schemas.ValidationError
		if errors.As(err, &ve) {
			return c, ve.Problems
		}
		return c, []schemas.Problem{{Message: err.Error()}}
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, []schemas.Problem{{Message: err.Error()}}
	}
	return c, nil
}

func knownAction(a string) bool { return slices.Contains(Actions(), a) }
