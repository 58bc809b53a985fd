package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
)

// submitSleeper POSTs workflow id, whose one step sleeps for ten minutes,
// and returns once an orchestrator has recorded it.
func submitSleeper(t *testing.T, base, id string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"workflow_id": id, "plan": map[string]any{
		"steps": []map[string]any{{"id": "nap", "capability": "sleep", "input": map[string]int{"ms": 600000}}},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/workflows", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sub gateway.SubmitResponse
	if err := json.NewDecoder(resp.Body).Decode(&sub); err != nil || resp.StatusCode != http.StatusAccepted || sub.Status != "accepted" {
		t.Fatalf("submit: status %d, answer %+v (%v): want 202 accepted", resp.StatusCode, sub, err)
	}
}

func TestControlCommands(t *testing.T) {
	s := startServe(t, t.TempDir())
	url := s.info.HTTPURL
	submitSleeper(t, url, "napping")

	code, out, stderr := cli(t, "approve", "--url", url, "--reject", "--comment", "no", "napping")
	if code != exitFailed || !strings.Contains(out, "no step awaits a decision") {
		t.Fatalf("approve --reject with nothing awaiting: exit %d (want %d):\n%s%s", code, exitFailed, out, stderr)
	}

	code, out, stderr = cli(t, "cancel", "--url", url, "--reason", "enough", "napping")
	if code != exitCompleted || !strings.Contains(out, "workflow napping: canceled (status canceled)") {
		t.Fatalf("cancel: exit %d (want %d):\n%s%s", code, exitCompleted, out, stderr)
	}
	// The workflow's stream ends with the cancellation and its reason.
	code, out, _ = cli(t, "watch", "--url", url, "--json", "napping")
	if code != exitCanceled || !strings.Contains(out, `"type":"cancelled"`) || !strings.Contains(out, "enough") {
		t.Fatalf("watch after cancel: exit %d (want %d):\n%s", code, exitCanceled, out)
	}

	code, out, stderr = cli(t, "cancel", "--url", url, "--json", "napping")
	var res events.ControlResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("second cancel --json printed %q: %v", out, err)
	}
	if code != exitFailed || res.Applied || res.WorkflowID != "napping" || res.Status != events.StateCanceled {
		t.Fatalf("second cancel: exit %d (want %d), result %+v\n%s", code, exitFailed, res, stderr)
	}

	code, out, stderr = cli(t, "cancel", "--url", url, "no-such-workflow")
	if code != exitUsage || !strings.Contains(stderr, "404") || !strings.Contains(stderr, "no-such-workflow") {
		t.Fatalf("cancel of an unknown id: exit %d (want %d):\n%s%s", code, exitUsage, out, stderr)
	}
	code, _, stderr = cli(t, "cancel", "--url", url, "--tenant", "acme", "napping")
	if code != exitUsage || !strings.Contains(stderr, "404") {
		t.Fatalf("cancel of another tenant's workflow: exit %d (want %d): %s", code, exitUsage, stderr)
	}

	code, out, _ = cli(t, "ask", "--url", url, "--json", "all done")
	if code != exitCompleted {
		t.Fatalf("ask: exit %d\n%s", code, out)
	}
	var first struct {
		WorkflowID string `json:"workflow_id"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &first); err != nil || first.WorkflowID == "" {
		t.Fatalf("ask --json first line: %q (%v)", out, err)
	}
	done := first.WorkflowID
	code, out, stderr = cli(t, "resume", "--url", url, done)
	if code != exitFailed || !strings.Contains(out, "only a failed workflow can be resumed") || !strings.Contains(out, "status completed") {
		t.Fatalf("resume of a completed workflow: exit %d (want %d):\n%s%s", code, exitFailed, out, stderr)
	}
	code, out, stderr = cli(t, "approve", "--url", url, "--reject", done)
	if code != exitFailed || !strings.Contains(out, "already completed") {
		t.Fatalf("approve --reject of a completed workflow: exit %d (want %d):\n%s%s", code, exitFailed, out, stderr)
	}

	code, _, stderr = cli(t, "cancel", "--url", url)
	if code != exitUsage || stderr == "" {
		t.Fatalf("cancel without an id: exit %d (want %d): %q", code, exitUsage, stderr)
	}
}
