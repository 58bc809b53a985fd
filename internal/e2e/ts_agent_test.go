package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The TypeScript agent in examples/ts-agent, written only from the README's
// wire section, serves "shout" in a real workflow: two instances share the
// consumer; a step that outlasts AckWait is delivered once (in-progress
// acks); one killed mid-step hands its step to the next delivery, which
// completes it once; a bad input fails the workflow with the agent's
// reason; a step past MaxDeliver is dead-lettered and fails the workflow
// (testShoutProgram, which the Python agent's test shares).
func TestTypeScriptAgent(t *testing.T) {
	dir := buildTSAgent(t) // before the deadline starts: a cold npm ci takes a while
	testShoutProgram(t, shoutProgram{prefix: "ts", language: "typescript", source: "/examples/ts-agent", hands: true,
		command: func(env []string) *exec.Cmd {
			cmd := exec.Command("node", "dist/agent.js")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), env...)
			return cmd
		}})
}

// buildTSAgent installs (npm ci, when node_modules is missing) and compiles
// examples/ts-agent, or skips the test when node or npm is absent.
func buildTSAgent(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found on PATH: the TypeScript agent example needs Node.js 18+ and npm (apt-get install nodejs npm)", tool)
		}
	}
	dir, err := filepath.Abs("../../examples/ts-agent")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@nats-io", "jetstream")); err != nil {
		run("ci")
	}
	if !builtFromSources(dir) {
		run("run", "build")
	}
	return dir
}

// builtFromSources reports whether the ts-agent's dist/agent.js is newer
// than its sources and build settings: the second test that needs it
// does not compile it again (tsc takes seconds).
func builtFromSources(dir string) bool {
	built, err := os.Stat(filepath.Join(dir, "dist", "agent.js"))
	if err != nil {
		return false
	}
	fresh := true
	for _, name := range []string{"package.json", "package-lock.json", "tsconfig.json"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || !fi.ModTime().Before(built.ModTime()) {
			return false
		}
	}
	err = filepath.WalkDir(filepath.Join(dir, "src"), func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fi, err := d.Info(); err != nil || !fi.ModTime().Before(built.ModTime()) {
			fresh = false
		}
		return nil
	})
	return err == nil && fresh
}
