package api_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
)

func TestSubmitRequestSubmitted(t *testing.T) {
	plan := &events.Plan{Steps: []events.PlanStep{{ID: "s", Capability: "echo"}}}
	r := api.SubmitRequest{WorkflowID: "w1", Query: "q", Plan: plan, Metadata: map[string]string{"k": "v"}, TimeoutMS: 9, SessionID: "s1"}
	want := events.WorkflowSubmitted{Query: "q", Plan: plan, Metadata: map[string]string{"k": "v"}, TimeoutMS: 9, SessionID: "s1"}
	if got := r.Submitted(); !reflect.DeepEqual(got, want) {
		t.Errorf("Submitted() = %+v, want %+v", got, want)
	}
}

func TestControlRequestControl(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name   string
		action string
		req    api.ControlRequest
		want   events.Control
	}{
		{"cancel with a reason", events.ActionCancel, api.ControlRequest{Reason: "enough"},
			events.Control{Action: events.ActionCancel, Reason: "enough"}},
		{"resume", events.ActionResume, api.ControlRequest{},
			events.Control{Action: events.ActionResume}},
		{"approve, the comment is the reason", events.ActionApprove, api.ControlRequest{Reason: "r", Comment: "ok", Approve: &yes, StepID: "s"},
			events.Control{Action: events.ActionApprove, Reason: "ok", StepID: "s"}},
		{"approve by default", events.ActionApprove, api.ControlRequest{},
			events.Control{Action: events.ActionApprove}},
		{"approve false rejects", events.ActionApprove, api.ControlRequest{Approve: &no, StepID: "s", Comment: "no"},
			events.Control{Action: events.ActionReject, Reason: "no", StepID: "s"}},
		{"approve false means nothing to cancel", events.ActionCancel, api.ControlRequest{Approve: &no},
			events.Control{Action: events.ActionCancel}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.req.Control(tt.action); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Control(%q) = %+v, want %+v", tt.action, got, tt.want)
			}
		})
	}
}

func TestRevisionState(t *testing.T) {
	r := api.Revision{Revision: 2, Status: "completed", Checkpoint: json.RawMessage(`{"workflow_id":"w1","status":"completed"}`)}
	s, err := r.State()
	if err != nil {
		t.Fatal(err)
	}
	if s.WorkflowID != "w1" || s.Status != events.StateCompleted {
		t.Errorf("State() = %+v, want workflow w1, completed", s)
	}
	if _, err := (api.Revision{Checkpoint: json.RawMessage(`[`)}).State(); err == nil {
		t.Error("State() of a broken checkpoint succeeded")
	}
}

func TestBodyProblems(t *testing.T) {
	got := api.BodyProblems([]schemas.Problem{{Pointer: "", Message: "not an object"}, {Pointer: "/plan", Message: "required"}})
	want := []api.Problem{{In: api.InBody, Message: "not an object"}, {In: api.InBody, Pointer: "/plan", Message: "required"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("BodyProblems = %+v, want %+v", got, want)
	}
}
