package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolPermissionsFlagRejectsBadTables: a bad tool permissions table
// stops serve, orchestrator and gateway before anything starts, naming
// the flag and the JSON pointer.
func TestToolPermissionsFlagRejectsBadTables(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "perms.json")
	if err := os.WriteFile(bad, []byte(`{"acme": {"client": {"deny": "tool_x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		env  string
		says []string
	}{
		{"file", []string{"serve", "--data", dir, "--tool-permissions", bad}, "", []string{"--tool-permissions " + bad, "/acme/client/deny"}},
		{"missing file", []string{"orchestrator", "--tool-permissions", filepath.Join(dir, "nope.json")}, "", []string{"nope.json", "no such file"}},
		{"inline env", []string{"gateway"}, `{"acme": {"client": {"allow": ["[a-"]}}}`, []string{"inline JSON", "/acme/client/allow/0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("AGENTBUS_TOOL_PERMISSIONS", c.env)
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
