package api_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/events"
)

// TestJSONShapes pins the wire: each value encodes (as the gateway writes
// it, indented) to testdata/<name>.json byte for byte, and the file decodes
// back to the value.
func TestJSONShapes(t *testing.T) {
	no := false
	tests := []struct {
		name string
		v    any
		// lossy: MarshalJSON drops what a problem's place does not use, so
		// the value does not come back as it was.
		lossy bool
	}{
		{"submit_request", api.SubmitRequest{WorkflowID: "w1", Query: "what is jetstream?",
			Plan:     &events.Plan{Steps: []events.PlanStep{{ID: "s", Capability: "echo"}}},
			Metadata: map[string]string{"k": "v"}, TimeoutMS: 5000, SessionID: "s1"}, false},
		{"submit_request_empty", api.SubmitRequest{}, false},
		{"submit_response", api.SubmitResponse{WorkflowID: "w1", TenantID: "acme", Status: api.StatusAccepted,
			EventsURL: "/v1/workflows/w1/events", StateURL: "/v1/workflows/w1", EventsSubject: "agentbus.acme.events.w1"}, false},
		{"submit_response_nats", api.SubmitResponse{WorkflowID: "w1", TenantID: "acme", Status: api.StatusQueued,
			EventsSubject: "agentbus.acme.events.w1"}, false},
		{"fork_request", api.ForkRequest{}, false},
		{"fork_request_id", api.ForkRequest{Revision: 7, WorkflowID: "w2"}, false},
		{"control_request", api.ControlRequest{Reason: "why", Comment: "looks good", Approve: &no, StepID: "s"}, false},
		{"control_request_empty", api.ControlRequest{}, false},
		{"error", api.ErrorResponse{Error: api.Error{Code: "invalid_request", Message: "/plan: required", Problems: []api.Problem{
			{In: api.InBody, Name: "dropped", Message: "not an object"},
			{In: api.InBody, Pointer: "/plan", Message: "required"},
			{In: api.InQuery, Name: "limit", Pointer: "/dropped", Message: `"x": want an integer in [1, 1000]`},
			{In: api.InHeader, Name: api.TenantHeader, Message: `"A B" is not a tenant id`},
			{In: api.InPath, Name: "id", Message: `no workflow "w9"`},
		}}}, true},
		{"error_plain", api.ErrorResponse{Error: api.Error{Code: "exists", Message: `workflow "w1" already exists`}}, false},
		{"error_quota", api.ErrorResponse{Error: api.Error{Code: "quota_exceeded",
			Message: "tenant acme has 2 workflows running, its quota is 2: try again when one has ended",
			Quota:   &api.Quota{Name: api.QuotaRunning, Limit: 2, Current: 2}}}, false},
		{"error_key_reused", api.ErrorResponse{Error: api.Error{Code: "idempotency_key_reused",
			Message: `idempotency key "order-1" was already used for a different request (workflow w1): send that same request again to get its workflow, or use a new key`,
			Problems: []api.Problem{{In: api.InHeader, Name: api.IdempotencyHeader,
				Message: `"order-1" was sent with another request within the last 24 hours, which started workflow w1`}}}}, false},
		{"revision", api.Revision{Revision: 3, Status: "superseded", Checkpoint: json.RawMessage(`{"status":"working"}`)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", tt.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			enc := json.NewEncoder(&got)
			enc.SetIndent("", "  ")
			if err := enc.Encode(tt.v); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("encoded:\n%s\nwant testdata/%s.json:\n%s", got.Bytes(), tt.name, want)
			}
			if tt.lossy {
				return
			}
			back := reflect.New(reflect.TypeOf(tt.v))
			if err := json.Unmarshal(want, back.Interface()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Elem().Interface(), tt.v) {
				t.Errorf("decoded %+v, want %+v", back.Elem().Interface(), tt.v)
			}
		})
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    api.Problem
		want string
	}{
		{api.Problem{In: api.InQuery, Name: "from", Message: "bad"}, "query parameter from: bad"},
		{api.Problem{In: api.InPath, Name: "id", Message: "bad"}, "path parameter id: bad"},
		{api.Problem{In: api.InHeader, Name: api.UserHeader, Message: "bad"}, "header X-Agentbus-User: bad"},
		{api.Problem{In: api.InBody, Pointer: "/plan", Message: "bad"}, "/plan: bad"},
		{api.Problem{In: api.InBody, Message: "bad"}, "/: bad"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.p.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}
