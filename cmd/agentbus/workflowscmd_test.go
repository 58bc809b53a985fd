package main

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestWorkflowCommands: against a serve, agentbus list, history, fork
// and delete do what their endpoints do, with a table by default and the
// answer's JSON with --json; delete refuses a running workflow (exit 1)
// and the deleted one is gone from every command.
func TestWorkflowCommands(t *testing.T) {
	s := startServe(t, t.TempDir())
	u := s.info.HTTPURL
	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"steps":[{"id":"A","capability":"echo","input":"a"},{"id":"B","capability":"echo","depends_on":["A"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := cli(t, "ask", "--url", u, "--plan", plan, "--json", "two steps")
	if code != exitCompleted {
		t.Fatalf("ask exit %d: %s %s", code, out, stderr)
	}
	fs := frames(t, out)
	id := fs[len(fs)-1]["workflow_id"].(string)

	code, out, stderr = cli(t, "list", "--url", u)
	if code != 0 || !regexp.MustCompile(`(?m)^WORKFLOW\s+STATUS\s+CREATED\s+UPDATED\s+USER\s+QUERY$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(id)+`\s+completed\s+\d{4}-\d\d-\d\d .*two steps$`).MatchString(out) {
		t.Errorf("list: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = cli(t, "list", "--url", u, "--status", "failed")
	if code != 0 || strings.TrimSpace(out) != "no workflows" {
		t.Errorf("list --status failed: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "list", "--url", u, "--status", "bogus")
	if code != exitUsage || !strings.Contains(out+stderrOf(t, "list", "--url", u, "--status", "bogus"), "status") {
		t.Errorf("list --status bogus: exit %d", code)
	}

	code, out, stderr = cli(t, "history", "--url", u, id)
	if code != 0 || !regexp.MustCompile(`(?m)^REVISION\s+CHECKPOINT\s+STATUS\s+PHASE\s+STEPS DONE\s+UPDATED$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\d+\s+completed\s+completed\s+done\s+2/2\s`).MatchString(out) {
		t.Errorf("history: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = cli(t, "history", "--url", u, "--json", id)
	var hist struct {
		Revisions []struct {
			Revision uint64 `json:"revision"`
		} `json:"revisions"`
	}
	if err := json.Unmarshal([]byte(out), &hist); code != 0 || err != nil || len(hist.Revisions) < 2 {
		t.Fatalf("history --json: exit %d, %v\n%s", code, err, out)
	}

	rev := strconv.FormatUint(hist.Revisions[0].Revision, 10)
	code, out, stderr = cli(t, "fork", "--url", u, id, "--revision", rev, "--id", "forked")
	if code != 0 || !strings.Contains(out, "forked "+id+" at revision "+rev+" as forked") {
		t.Errorf("fork: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr = cli(t, "fork", "--url", u, id); code != exitUsage || !strings.Contains(stderr, "--revision") {
		t.Errorf("fork without --revision: exit %d %s", code, stderr)
	}

	sleepPlan := filepath.Join(t.TempDir(), "sleep.json")
	if err := os.WriteFile(sleepPlan, []byte(`{"steps":[{"id":"A","capability":"sleep","input":{"ms":600000}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	resp := postJSON(t, u+"/v1/workflows", `{"workflow_id":"sleeper","plan":`+mustRead(t, sleepPlan)+`}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit sleeper: %d", resp.StatusCode)
	}
	code, _, stderr = cli(t, "delete", "--url", u, "sleeper")
	if code != exitFailed || !strings.Contains(stderr, "cancel it first") {
		t.Errorf("delete of a running workflow: exit %d %s", code, stderr)
	}

	code, out, stderr = cli(t, "delete", "--url", u, id)
	if code != 0 || !regexp.MustCompile(`^deleted workflow `+regexp.QuoteMeta(id)+` \(completed\): \d+ checkpoint revisions, \d+ events`).MatchString(out) {
		t.Errorf("delete: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr = cli(t, "history", "--url", u, id); code != exitUsage || !strings.Contains(stderr, "no workflow") {
		t.Errorf("history after delete: exit %d %s", code, stderr)
	}
	if code, _, _ = cli(t, "delete", "--url", u, id); code != exitUsage {
		t.Errorf("delete again: exit %d, want %d", code, exitUsage)
	}
	code, out, _ = cli(t, "list", "--url", u, "--json")
	var page workflowPage
	if err := json.Unmarshal([]byte(out), &page); code != 0 || err != nil {
		t.Fatalf("list --json: exit %d %v\n%s", code, err, out)
	}
	for _, w := range page.Workflows {
		if w.WorkflowID == id {
			t.Errorf("list --json after delete still has %s", id)
		}
	}
	if len(page.Workflows) != 2 {
		t.Errorf("list --json: %d workflows, want the fork and the sleeper", len(page.Workflows))
	}
	code, out, _ = cli(t, "list", "--url", u, "--limit", "1")
	if code != 0 || !strings.Contains(out, "more: agentbus list --after ") {
		t.Errorf("list --limit 1: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, "list", "--url", u, "--limit", "1", "--all", "--json")
	if err := json.Unmarshal([]byte(out), &page); code != 0 || err != nil || len(page.Workflows) != 2 || page.Next != "" {
		t.Errorf("list --limit 1 --all: exit %d %v\n%s", code, err, out)
	}
}

// TestDocumentsCommands: agentbus documents list, get and delete read and
// remove what an upload indexed.
func TestDocumentsCommands(t *testing.T) {
	s := startServe(t, t.TempDir())
	u := s.info.HTTPURL
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "herons.md")
	_, _ = fw.Write([]byte("# Herons\n\nThe grey heron migrates in the month of quintember.\n"))
	_ = mw.Close()
	resp, err := http.Post(u+"/v1/documents", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	var up struct {
		WorkflowID string `json:"workflow_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&up)
	resp.Body.Close()
	if code, _, stderr := cli(t, "watch", "--url", u, "--json", up.WorkflowID); code != exitCompleted {
		t.Fatalf("the upload's workflow: exit %d %s", code, stderr)
	}

	code, out, stderr := cli(t, "documents", "list", "--url", u)
	if code != 0 || !regexp.MustCompile(`(?m)^herons\.md\s+1\s+\d{4}-.*Herons`).MatchString(out) || !strings.Contains(out, "1 of 1 documents") {
		t.Errorf("documents list: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = cli(t, "documents", "get", "--url", u, "--json", "herons.md")
	if code != 0 || !strings.Contains(out, `"id": "herons.md"`) || !strings.Contains(out, `"chunks": 1`) {
		t.Errorf("documents get --json: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = cli(t, "documents", "get", "--url", u, "herons.md")
	if code != 0 || !strings.HasPrefix(out, "document herons.md: 1 chunks") || !strings.Contains(out, "title:  Herons") {
		t.Errorf("documents get: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = cli(t, "documents", "delete", "--url", u, "herons.md")
	if code != 0 || strings.TrimSpace(out) != "deleted document herons.md (1 chunks)" {
		t.Errorf("documents delete: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr = cli(t, "documents", "get", "--url", u, "herons.md"); code != exitUsage || !strings.Contains(stderr, "herons.md") {
		t.Errorf("documents get after delete: exit %d %s", code, stderr)
	}
	code, out, _ = cli(t, "documents", "list", "--url", u, "--json")
	if code != 0 || !strings.Contains(out, `"total": 0`) {
		t.Errorf("documents list --json after delete: exit %d\n%s", code, out)
	}
	// The upload's workflow goes with what is left of it.
	if code, out, stderr = cli(t, "delete", "--url", u, up.WorkflowID); code != 0 {
		t.Errorf("delete the upload's workflow: exit %d %s%s", code, out, stderr)
	}
}

func stderrOf(t *testing.T, args ...string) string {
	t.Helper()
	_, _, stderr := cli(t, args...)
	return stderr
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func postJSON(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}
