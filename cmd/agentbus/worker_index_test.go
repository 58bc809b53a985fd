package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestWorkerBesideServeSharesNoIndex: the embedded index is one process's.
// A worker with the default capabilities started beside a serve that holds
// it serves everything but search and says why; one asked for search fails
// at once naming the holder, rather than hanging on its first search.
func TestWorkerBesideServeSharesNoIndex(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir)
	index := filepath.Join(dir, "index")

	w := startProc(t, "worker", "--nats", s.info.NATSURL, "--index-dir", index, "--heartbeat", "200ms")
	m := w.waitLine(t, regexp.MustCompile(`msg="worker serving".* capabilities="\[([^\]]*)\]"`))
	if strings.Contains(m[1], "search") || !strings.Contains(m[1], "summarize") {
		t.Fatalf("default worker serves %q: want everything but search", m[1])
	}
	if !strings.Contains(w.output(), "not serving search") {
		t.Fatalf("no warning about search:\n%s", w.output())
	}

	code, _, stderr := cli(t, "worker", "--nats", s.info.NATSURL, "--index-dir", index, "--capabilities", "search")
	if code != exitUsage || !strings.Contains(stderr, "index directory in use") || !strings.Contains(stderr, "open in process") {
		t.Fatalf("worker --capabilities search: exit %d, %q; want a usage error naming the lock holder", code, stderr)
	}
}
