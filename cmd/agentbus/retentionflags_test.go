package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/retention"
)

// TestRetentionFlagsRejectBadValues: a bad retention table or period
// stops serve and orchestrator before anything starts, naming the flag
// and where in the table.
func TestRetentionFlagsRejectBadValues(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "retention.json")
	if err := os.WriteFile(bad, []byte(`{"acme": {"completed": "a week"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		env  string
		says []string
	}{
		{"file", []string{"serve", "--data", dir, "--retention", bad}, "", []string{"--retention " + bad, "/acme/completed", "a week"}},
		{"schema", []string{"orchestrator"}, `{"acme": {"kept": "1d"}}`, []string{"inline JSON", "/acme"}},
		{"short period", []string{"orchestrator", "--retention-completed", "30s"}, "", []string{"retention-completed", "below 1m"}},
		{"bad period", []string{"orchestrator", "--retention-failed", "a month"}, "", []string{"retention-failed", "a month"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("AGENTBUS_RETENTION", c.env)
			}
			code, _, stderr := cli(t, c.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d: %s", code, exitUsage, stderr)
			}
			for _, s := range c.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q lacks %q", stderr, s)
				}
			}
		})
	}
}

// TestRetentionFlagsPolicy: the flags and the table make the
// orchestrator's policy; --retention-interval 0 turns the sweep off.
func TestRetentionFlagsPolicy(t *testing.T) {
	var f retentionFlags
	f.completed.d, f.failed.d, f.interval = retention.DefaultCompleted, retention.DefaultFailed, time.Minute
	for flag, v := range map[*periodValue]string{&f.completed: "2d", &f.failed: "forever"} {
		if err := flag.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.table.Set(`{"acme": {"failed": "36h"}}`); err != nil || f.check() != nil {
		t.Fatalf("table: %v %v", err, f.check())
	}
	p := f.policy()
	for _, c := range []struct {
		tenant, status string
		want           time.Duration
		purged         bool
	}{
		{"beta", "completed", 48 * time.Hour, true},
		{"beta", "failed", 0, false},
		{"acme", "canceled", 36 * time.Hour, true},
		{"acme", "working", 0, false},
	} {
		d, ok := p.For(c.tenant, events.State(c.status))
		if ok != c.purged || ok && d != c.want {
			t.Errorf("%s %s: %s %v, want %s %v", c.tenant, c.status, d, ok, c.want, c.purged)
		}
	}
	if f.completed.String() != "2d" || f.failed.String() != "forever" || f.sweepInterval() != time.Minute {
		t.Errorf("values: %s %s %s", f.completed.String(), f.failed.String(), f.sweepInterval())
	}
	f.interval = 0
	if f.sweepInterval() >= 0 {
		t.Errorf("--retention-interval 0: interval %s, want off (negative)", f.sweepInterval())
	}
}
