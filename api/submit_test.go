package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentbus/agentbus/api"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// The bus publishes submissions as it is.
var _ api.Publisher[bus.Published] = (*bus.Bus)(nil)

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestSubmit publishes on a real server: the submission lands on the
// tenant's submit subject as a workflow.submitted event whose id and
// Nats-Msg-Id are events.SubmitKey, and the same workflow submitted again
// within the dedup window is stored once.
func TestSubmit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		workflows []string
		wantMsgs  uint64
	}{
		{"one workflow", []string{"w1"}, 1},
		{"the same workflow twice is stored once", []string{"w1", "w1"}, 1},
		{"two workflows are stored twice", []string{"w1", "w2"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := bustest.New(t)
			sub := events.WorkflowSubmitted{Query: "what is jetstream?", Metadata: map[string]string{"k": "v"},
				TimeoutMS: 5000, SessionID: "s1", User: "u1"}
			for _, wf := range tt.workflows {
				got, err := api.Submit(testCtx(t), env.Bus, "/agentbus/test", "acme", wf, sub)
				if err != nil {
					t.Fatalf("Submit %s: %v", wf, err)
				}
				evSubj, _ := subjects.Events("acme", wf)
				want := api.SubmitResponse{WorkflowID: wf, TenantID: "acme", Status: api.StatusQueued, EventsSubject: evSubj}
				if got != want {
					t.Errorf("Submit %s = %+v, want %+v", wf, got, want)
				}
			}
			stream, err := env.Bus.JetStream().Stream(testCtx(t), subjects.StreamWorkflows)
			if err != nil {
				t.Fatal(err)
			}
			info, err := stream.Info(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			if info.State.Msgs != tt.wantMsgs {
				t.Errorf("%s holds %d messages, want %d", subjects.StreamWorkflows, info.State.Msgs, tt.wantMsgs)
			}
			subj, _ := subjects.Submit("acme")
			m, err := stream.GetLastMsgForSubject(testCtx(t), subj)
			if err != nil {
				t.Fatalf("last message on %s: %v", subj, err)
			}
			wf := tt.workflows[len(tt.workflows)-1]
			key := events.SubmitKey("acme", wf)
			if got := m.Header.Get("Nats-Msg-Id"); got != key {
				t.Errorf("Nats-Msg-Id = %q, want %q", got, key)
			}
			e, err := events.Decode(map[string][]string(m.Header), m.Data)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if e.Type != events.TypeWorkflowSubmitted || e.ID != key || e.Source != "/agentbus/test" ||
				e.TenantID != "acme" || e.WorkflowID != wf || e.StepID != "" {
				t.Errorf("envelope = %+v, want a %s of acme/%s with id %q from /agentbus/test", e, events.TypeWorkflowSubmitted, wf, key)
			}
			var got events.WorkflowSubmitted
			if err := json.Unmarshal(e.Data, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, sub) {
				t.Errorf("payload = %+v, want %+v", got, sub)
			}
		})
	}
}

// recorder is a Publisher that records its calls and fails with err.
type recorder struct {
	calls int
	err   error
}

func (r *recorder) Publish(context.Context, string, events.Envelope, string) (struct{}, error) {
	r.calls++
	return struct{}{}, r.err
}

func TestSubmitRefusesBadIDsBeforePublishing(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, tenant, workflow string }{
		{"empty tenant", "", "w1"},
		{"tenant with a dot", "a.b", "w1"},
		{"empty workflow", "acme", ""},
		{"workflow with a wildcard", "acme", "w*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var r recorder
			_, err := api.Submit(testCtx(t), &r, events.SourceGateway, tt.tenant, tt.workflow, events.WorkflowSubmitted{Query: "q"})
			if err == nil {
				t.Fatal("Submit succeeded")
			}
			if r.calls != 0 {
				t.Errorf("published %d times, want 0", r.calls)
			}
		})
	}
}

// TestSubmitReturnsThePublishersError: the caller's message says what the
// bus said, unwrapped.
func TestSubmitReturnsThePublishersError(t *testing.T) {
	t.Parallel()
	want := errors.New("bus: publish workflow.submitted: no responders")
	r := recorder{err: want}
	_, err := api.Submit(testCtx(t), &r, events.SourceGateway, "acme", "w1", events.WorkflowSubmitted{Query: "q"})
	if err != want { // the very error, not one wrapping it
		t.Errorf("Submit error = %v, want the publisher's %v as it is", err, want)
	}
	if r.calls != 1 {
		t.Errorf("published %d times, want 1", r.calls)
	}
}
