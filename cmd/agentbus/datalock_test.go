package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecondServeOnOneDataDir: a second serve on the data directory of a
// running one exits 3 at once naming the holder, before it opens the
// store; after the first is killed with SIGKILL a restart on the same
// directory succeeds (the lock died with its holder).
func TestSecondServeOnOneDataDir(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	dir := t.TempDir()
	args := []string{"serve", "--data", dir, "--nats-addr", "127.0.0.1:-1", "--http-addr", "127.0.0.1:0", "--capabilities", "echo", "--sample-corpus=false"}
	first := startProc(t, args...)
	first.waitLine(t, readyLine)

	start := time.Now()
	second := startProc(t, args...)
	select {
	case <-second.done:
	case <-time.After(time.Second):
		t.Fatalf("second serve still running after 1s:\n%s", second.output())
	}
	took := time.Since(start)
	host, _ := os.Hostname()
	want := regexp.MustCompile(`agentbus: data directory ` + regexp.QuoteMeta(dir) + ` is in use by pid ` + strconv.Itoa(first.pid()) +
		` on host ` + regexp.QuoteMeta(host) + ` since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(agentbus serve\)`)
	if code := second.cmd.ProcessState.ExitCode(); code != exitUsage || !want.MatchString(second.output()) {
		t.Fatalf("second serve: exit %d after %s, output:\n%s\nwant exit %d and %s", code, took, second.output(), exitUsage, want)
	}
	if strings.Contains(second.output(), "Filestore") || strings.Contains(second.output(), "nats") {
		t.Errorf("second serve touched the store:\n%s", second.output())
	}

	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	again := startProc(t, args...)
	again.waitLine(t, readyLine)
}

// TestIndexAndEvalLockTheDataDir: index and eval on the data directory of
// a running serve are refused with exit 3 naming it, before they open
// anything; once it stops, index runs.
func TestIndexAndEvalLockTheDataDir(t *testing.T) {
	dir, docs := t.TempDir(), t.TempDir()
	writeFiles(t, docs, map[string]string{"a.md": "Compute a SHA-256 checksum."})
	s := startServeWith(t, serveFlags{data: dir, eventsMaxAge: time.Hour}, 20*time.Second)
	want := "data directory " + dir + " is in use by pid " + strconv.Itoa(os.Getpid())
	for _, args := range [][]string{
		{"index", "--data", dir, docs},
		{"eval", "--data", dir},
		{"index", "--data", dir, "--search-backend", "vespa", "--vespa-url", "http://127.0.0.1:1", docs},
	} {
		code, out, errs := searchCLI(t, args...)
		if code != exitUsage || !strings.Contains(errs, want) || !strings.Contains(errs, "(agentbus serve)") {
			t.Errorf("%v: exit %d, stderr %q (stdout %q): want %d and %q", args, code, errs, out, exitUsage, want)
		}
	}
	if err := s.stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if code, out, errs := searchCLI(t, "index", "--data", dir, docs); code != exitCompleted {
		t.Fatalf("index after serve stopped: exit %d\n%s%s", code, out, errs)
	}
}

// TestBadFlagsLockNothing: index and eval with bad flags fail before the
// data directory is created or locked.
func TestBadFlagsLockNothing(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	for _, args := range [][]string{
		{"index", "--data", data, "--search-backend", "solr", "x"},
		{"eval", "--data", data, "--tenant", "A.B"},
		{"index", "--data", data, "--vespa-url", "http://x", "x"},
	} {
		if code, _, errs := searchCLI(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Fatalf("%v created %s", args, data)
		}
	}
}
