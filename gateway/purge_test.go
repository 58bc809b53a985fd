package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

// TestDeleteWorkflow: DELETE /v1/workflows/{id} purges an ended workflow
// now — its state, history and events are gone, it is 404 and out of the
// list — and refuses a running one with 409 naming its status, until it
// is canceled.
func TestDeleteWorkflow(t *testing.T) {
	block := newBlocker()
	s := startStackWith(t, block)
	done := s.mustSubmit(t, map[string]any{"workflow_id": "done", "plan": plan("A:echo", "B:echo:A")})
	s.mustFollow(t, done.EventsURL)
	s.mustSubmit(t, map[string]any{"workflow_id": "live", "plan": plan("A:block")})
	await(t, "step A running", block.started, "live")

	r := s.mustDo(t, http.MethodDelete, "/v1/workflows/live", nil)
	e := wantError(t, "DELETE a running workflow", r, http.StatusConflict, "not_ended")
	if !strings.Contains(e.Error.Message, "working") || !strings.Contains(e.Error.Message, "cancel") {
		t.Errorf("409 message %q: want the status and the way out", e.Error.Message)
	}
	if st := s.state(t, "/v1/workflows/live"); st["status"] != "working" {
		t.Errorf("the running workflow after a refused delete: %v", st["status"])
	}

	r = s.mustDo(t, http.MethodDelete, "/v1/workflows/done", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("DELETE an ended workflow: %d %s", r.Status, r.Body)
	}
	var got gateway.PurgeResponse
	if err := json.Unmarshal(r.Body, &got); err != nil || got.WorkflowID != "done" || got.Purged.Status != "completed" || got.Purged.Events == 0 {
		t.Errorf("DELETE answer %s (%v)", r.Body, err)
	}
	for _, path := range []string{"/v1/workflows/done", "/v1/workflows/done/checkpoints"} {
		wantError(t, "GET "+path+" after the delete", s.mustDo(t, http.MethodGet, path, nil), http.StatusNotFound, "not_found")
	}
	wantError(t, "DELETE again", s.mustDo(t, http.MethodDelete, "/v1/workflows/done", nil), http.StatusNotFound, "not_found")
	subj, _ := subjects.Events(gateway.DefaultTenant, "done")
	if n, err := s.env.Bus.Stored(t.Context(), subjects.StreamEvents, subj); err != nil || n != 0 {
		t.Errorf("events of the deleted workflow: %d stored (%v), want none", n, err)
	}
	r = s.mustDo(t, http.MethodGet, "/v1/workflows", nil)
	if r.Status != http.StatusOK || strings.Contains(string(r.Body), `"done"`) || !strings.Contains(string(r.Body), `"live"`) {
		t.Errorf("list after the delete: %d %s", r.Status, r.Body)
	}

	s.ctl(t, "live", "cancel", `{}`, http.StatusOK)
	if r := s.mustDo(t, http.MethodDelete, "/v1/workflows/live", nil); r.Status != http.StatusOK {
		t.Errorf("DELETE after the cancel: %d %s", r.Status, r.Body)
	}
	wantError(t, "GET after", s.mustDo(t, http.MethodGet, "/v1/workflows/live", nil), http.StatusNotFound, "not_found")
}
