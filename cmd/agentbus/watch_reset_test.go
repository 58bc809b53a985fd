package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWatchAfterExpiredEvents: `watch --from` an offset whose events have
// gone (expired, here deleted) shows the gateway's reset — why, and where
// it goes on — then the retained events to the end, instead of jumping
// silently.
func TestWatchAfterExpiredEvents(t *testing.T) {
	s := startServe(t, t.TempDir())
	code, out, stderr := cli(t, "ask", "--url", s.info.HTTPURL, "--json", "--plan", writePlan(t), "chain")
	if code != exitCompleted {
		t.Fatalf("ask: exit %d: %s%s", code, stderr, out)
	}
	fs := frames(t, out)
	wf := fs[0]["workflow_id"].(string)
	var offs []uint64
	for _, f := range fs {
		if o := uint64(f["offset"].(float64)); o > 0 {
			offs = append(offs, o)
		}
	}
	// The first three events "expire".
	_, js := rawConn(t, s.info.NATSURL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	str, err := js.Stream(ctx, "AGENTBUS_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offs[:3] {
		if err := str.DeleteMsg(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ = cli(t, "watch", "--url", s.info.HTTPURL, "--from", jsonNum(offs[0]), wf)
	if code != exitCompleted {
		t.Fatalf("watch: exit %d:\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.Contains(lines[0], "reset") || !strings.Contains(lines[0], "may have expired") ||
		!strings.Contains(lines[0], "continuing after offset "+jsonNum(offs[3]-1)) {
		t.Fatalf("first line %q: want the reset, its reason and where it continues", lines[0])
	}
	if !strings.Contains(out, "complete") {
		t.Fatalf("watch did not reach the end:\n%s", out)
	}
}

// writePlan writes a three-step echo chain and returns its path.
func writePlan(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plan.json")
	plan := `{"steps": [{"id": "A", "capability": "echo", "input": "a"}, {"id": "B", "capability": "echo", "depends_on": ["A"]}, {"id": "C", "capability": "echo", "depends_on": ["B"]}]}`
	if err := os.WriteFile(p, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
