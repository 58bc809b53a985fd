package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/gateway"
)

// ask --new-session prints the session's id; ask --session continues it:
// the follow-up is resolved against the first turn, and the gateway lists
// both turns.
func TestAskContinuesASession(t *testing.T) {
	s := startServe(t, t.TempDir())
	code, _, stderr := cli(t, "ask", "--url", s.info.HTTPURL, "--json", "--new-session", "how does sync.RWMutex work")
	if code != exitCompleted {
		t.Fatalf("ask --new-session: exit %d: %s", code, stderr)
	}
	m := regexp.MustCompile(`session ([a-z0-9-]+) \(continue it with`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no session id on stderr: %s", stderr)
	}
	id := m[1]
	code, out, stderr := cli(t, "ask", "--url", s.info.HTTPURL, "--json", "--session", id, "and what about its read lock?")
	if code != exitCompleted {
		t.Fatalf("ask --session: exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, `follow-up resolved against turn 1 (sync.RWMutex)`) {
		t.Fatalf("the plan does not say the follow-up was resolved:\n%s", out)
	}
	resp, err := http.Get(s.info.HTTPURL + "/v1/sessions/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var got gateway.SessionResponse
	if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != http.StatusOK || got.TurnCount != 2 ||
		got.Turns[1].ResolvedQuery != "sync.RWMutex read lock" {
		t.Fatalf("GET /v1/sessions/%s: %d %s", id, resp.StatusCode, b)
	}

	code, out, stderr = cli(t, "session", "--url", s.info.HTTPURL, id)
	if code != 0 || !strings.Contains(out, "2 turns") || !strings.Contains(out, "resolved: sync.RWMutex read lock") {
		t.Fatalf("agentbus session: exit %d: %s\n%s", code, stderr, out)
	}
	if code, out, stderr = cli(t, "session", "--url", s.info.HTTPURL); code != 0 || !strings.Contains(out, id+"  2 turns") {
		t.Fatalf("agentbus session (list): exit %d: %s\n%s", code, stderr, out)
	}
	if code, _, stderr = cli(t, "session", "--url", s.info.HTTPURL, "never-started"); code != exitUsage || !strings.Contains(stderr, `no session "never-started"`) {
		t.Fatalf("agentbus session of an unknown id: exit %d: %s", code, stderr)
	}

	for _, args := range [][]string{
		{"ask", "--url", s.info.HTTPURL, "--session", "Not.A.Token", "hi"},
		{"ask", "--url", s.info.HTTPURL, "--session", "abc", "--new-session", "hi"},
	} {
		if code, _, stderr := cli(t, args...); code != exitUsage || !strings.Contains(stderr, "--session") {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}
