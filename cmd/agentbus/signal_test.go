package main

import (
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeStopsCleanlyOnSignal: serve that gets SIGINT (a terminal's
// Ctrl-C, also through `make run`, which execs the binary) or SIGTERM shuts
// down and exits 0, releasing the data directory.
func TestServeStopsCleanlyOnSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"serve", "--data", dir, "--nats-addr", "127.0.0.1:-1", "--http-addr", "127.0.0.1:0", "--capabilities", "echo", "--sample-corpus=false"}
			p := startProc(t, args...)
			p.waitLine(t, readyLine)
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				t.Fatalf("serve still running 30s after %s", sig)
			}
			if code := p.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(p.output(), `msg="agentbus stopped"`) {
				t.Fatalf("exit %d after %s, output:\n%s", code, sig, p.output())
			}
			again := startProc(t, args...) // the lock went with it
			again.waitLine(t, readyLine)
		})
	}
}

// TestServeInterruptedWhileStarting: Ctrl-C while serve is still starting
// (here indexing the sample corpus) is a clean stop too: exit 0, saying
// what was cut short.
func TestServeInterruptedWhileStarting(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	p := startProc(t, "serve", "--data", t.TempDir(), "--nats-addr", "127.0.0.1:-1", "--http-addr", "127.0.0.1:0")
	p.waitLine(t, regexp.MustCompile(`indexing the shipped corpus`))
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve still running 30s after SIGINT")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d after SIGINT while starting, output:\n%s", code, p.output())
	}
}
