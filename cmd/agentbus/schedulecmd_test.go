package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestScheduleCommands: against a serve, agentbus schedule create, list,
// get, pause, unpause, trigger, backfill and delete do what their
// endpoints do, and the runs are listed by agentbus list --schedule.
func TestScheduleCommands(t *testing.T) {
	s := startServe(t, t.TempDir())
	u := s.info.HTTPURL
	code, out, stderr := cli(t, "schedule", "create", "tick", "--url", u, "--every", "1s", "--overlap", "allow_all", "--query", "hello", "--metadata", "team=ops")
	if code != 0 || !regexp.MustCompile(`(?m)^tick\s+every 1s\s+allow_all\s+active\s`).MatchString(out) {
		t.Fatalf("create: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = cli(t, "schedule", "create", "tick", "--url", u, "--cron", "* * *", "--query", "hello")
	if code != exitUsage || !strings.Contains(stderr, "/cron") {
		t.Fatalf("bad create: exit %d\n%s%s", code, out, stderr)
	}
	// It fires every second: its runs show up in agentbus list --schedule.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out, _ = cli(t, "list", "--url", u, "--schedule", "tick", "--status", "completed")
		if code == 0 && len(regexp.MustCompile(`(?m)^tick-\d+\s+completed`).FindAllString(out, -1)) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two completed runs of tick: exit %d\n%s", code, out)
		}
		<-time.After(200 * time.Millisecond)
	}
	code, out, stderr = cli(t, "schedule", "pause", "tick", "--url", u)
	if code != 0 || !regexp.MustCompile(`(?m)^tick\s.*\spaused\s+-\s`).MatchString(out) {
		t.Fatalf("pause: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = cli(t, "schedule", "get", "tick", "--url", u, "--json")
	var got struct {
		Paused bool `json:"paused"`
		State  struct {
			Started int `json:"started"`
		} `json:"state"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || !got.Paused || got.State.Started < 2 {
		t.Fatalf("get --json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	code, out, stderr = cli(t, "schedule", "trigger", "tick", "--url", u)
	if code != 0 || !regexp.MustCompile(`workflow tick-manual-\d+`).MatchString(out) {
		t.Fatalf("trigger: exit %d\n%s%s", code, out, stderr)
	}
	from := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	code, out, stderr = cli(t, "schedule", "backfill", "tick", "--url", u, "--from", from.Format(time.RFC3339), "--to", from.Add(2*time.Second).Format(time.RFC3339))
	if code != 0 || !strings.Contains(out, "3 slots fired") {
		t.Fatalf("backfill: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = cli(t, "schedule", "list", "--url", u, "--json")
	if code != 0 || !strings.Contains(out, `"schedule_id": "tick"`) {
		t.Fatalf("list --json: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = cli(t, "schedule", "unpause", "tick", "--url", u)
	if code != 0 || !regexp.MustCompile(`(?m)^tick\s.*\sactive\s`).MatchString(out) {
		t.Fatalf("unpause: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = cli(t, "schedule", "delete", "tick", "--url", u)
	if code != 0 || !strings.Contains(out, "schedule tick deleted") {
		t.Fatalf("delete: exit %d\n%s%s", code, out, stderr)
	}
	code, _, stderr = cli(t, "schedule", "get", "tick", "--url", u)
	if code != exitUsage || !strings.Contains(stderr, "no schedule") {
		t.Fatalf("get after delete: exit %d %s", code, stderr)
	}
}
