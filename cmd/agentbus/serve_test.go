package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// started is one in-process `agentbus serve`.
type started struct {
	info readyInfo
	stop func() error
}

// startServe runs serve on dir with random ports and waits until it is ready.
func startServe(t *testing.T, dir string) *started {
	t.Helper()
	return startServeWith(t, serveFlags{data: dir}, 20*time.Second)
}

// startServeWith runs serve with f — random ports, log level error and a
// week's event retention where f leaves them unset — and waits up to
// within for it to be ready.
func startServeWith(t *testing.T, f serveFlags, within time.Duration) *started {
	t.Helper()
	f.natsAddr = cmp.Or(f.natsAddr, "127.0.0.1:-1")
	f.httpAddr = cmp.Or(f.httpAddr, "127.0.0.1:0")
	f.logLevel = cmp.Or(f.logLevel, "error")
	f.eventsMaxAge = cmp.Or(f.eventsMaxAge, 7*24*time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	readyc := make(chan readyInfo, 1)
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, f, func(i readyInfo) { readyc <- i }) }()
	var once sync.Once
	var stopErr error
	s := &started{stop: func() error {
		once.Do(func() { cancel(); stopErr = <-errc })
		return stopErr
	}}
	t.Cleanup(func() { _ = s.stop() })
	select {
	case s.info = <-readyc:
	case err := <-errc:
		once.Do(func() { cancel(); stopErr = err }) // stop must not wait for it again
		t.Fatalf("serve exited before ready: %v", err)
	case <-time.After(within):
		t.Fatalf("serve not ready within %s", within)
	}
	return s
}

// cli runs the agentbus CLI in-process and returns its exit code and output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func frames(t *testing.T, out string) []map[string]any {
	t.Helper()
	var fs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var f map[string]any
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("not a JSON frame: %q", line)
		}
		fs = append(fs, f)
	}
	return fs
}

func TestAskCompletesAndWatchReplaysFromAnOffset(t *testing.T) {
	s := startServe(t, t.TempDir())
	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"steps":[{"id":"A","capability":"echo","input":"a"},
		{"id":"B","capability":"echo","depends_on":["A"]},{"id":"C","capability":"echo","depends_on":["A"]},
		{"id":"D","capability":"echo","depends_on":["B","C"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := cli(t, "ask", "--url", s.info.HTTPURL, "--plan", plan, "--json", "diamond")
	if code != exitCompleted {
		t.Fatalf("ask exit %d: %s %s", code, out, stderr)
	}
	fs := frames(t, out)
	end := fs[len(fs)-1]
	if end["type"] != "complete" || !strings.Contains(out, `"D":{"step_id":"D"`) {
		t.Fatalf("last frame %v", end)
	}
	wf := end["workflow_id"].(string)
	from := uint64(fs[2]["offset"].(float64))
	code, out, _ = cli(t, "watch", "--url", s.info.HTTPURL, "--json", "--from", jsonNum(from), wf)
	if code != exitCompleted {
		t.Fatalf("watch exit %d", code)
	}
	replay := frames(t, out)
	if len(replay) != len(fs)-3 || replay[0]["offset"] != fs[3]["offset"] {
		t.Fatalf("watch --from %d gave %d frames starting at %v; want %d starting at %v", from, len(replay), replay[0]["offset"], len(fs)-3, fs[3]["offset"])
	}
	// Human output names the steps and the result.
	code, out, _ = cli(t, "watch", "--url", s.info.HTTPURL, wf)
	if code != exitCompleted || !strings.Contains(out, "complete") || !strings.Contains(out, "dispatched to echo") {
		t.Fatalf("watch human output (exit %d):\n%s", code, out)
	}
}

func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestAskExitCodes(t *testing.T) {
	s := startServe(t, t.TempDir())
	dir := t.TempDir()
	cycle := filepath.Join(dir, "cycle.json")
	_ = os.WriteFile(cycle, []byte(`{"steps":[{"id":"A","capability":"echo","depends_on":["B"]},{"id":"B","capability":"echo","depends_on":["A"]}]}`), 0o600)
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"steps":[{"id":"a b","capability":"echo"}]}`), 0o600)
	cases := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"completed", []string{"ask", "--url", s.info.HTTPURL, "hello"}, exitCompleted, "hello"},
		{"failed plan", []string{"ask", "--url", s.info.HTTPURL, "--plan", cycle}, exitFailed, "A depends on B depends on A"},
		{"invalid plan file", []string{"ask", "--url", s.info.HTTPURL, "--plan", bad}, exitUsage, "/steps/0/id"},
		{"bad tenant", []string{"ask", "--url", s.info.HTTPURL, "--tenant", "Not.Valid", "q"}, exitUsage, "tenant"},
		{"no query", []string{"ask", "--url", s.info.HTTPURL}, exitUsage, "QUERY"},
		{"unreachable", []string{"ask", "--url", "http://127.0.0.1:1", "q"}, exitUsage, "cannot reach"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, stderr := cli(t, c.args...)
			if code != c.code || !strings.Contains(out+stderr, c.says) {
				t.Fatalf("exit %d (want %d), output does not say %q:\n%s\n%s", code, c.code, c.says, out, stderr)
			}
		})
	}
}

func TestEnvironmentSetsFlags(t *testing.T) {
	t.Setenv("AGENTBUS_URL", "http://127.0.0.1:1")
	code, _, stderr := cli(t, "ask", "q")
	if code != exitUsage || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Fatalf("AGENTBUS_URL not used: exit %d %s", code, stderr)
	}
	t.Setenv("AGENTBUS_LOG_LEVEL", "loud")
	code, _, stderr = cli(t, "serve", "--data", t.TempDir(), "--nats-addr", "127.0.0.1:-1", "--http-addr", "127.0.0.1:0")
	if code != exitUsage || !strings.Contains(stderr, "log-level") {
		t.Fatalf("bad AGENTBUS_LOG_LEVEL: exit %d %s", code, stderr)
	}
}

func TestServeRejectsBadFlags(t *testing.T) {
	cases := map[string][]string{
		"nats addr":      {"serve", "--data", t.TempDir(), "--nats-addr", "nohostport"},
		"http addr":      {"serve", "--data", t.TempDir(), "--nats-addr", "127.0.0.1:-1", "--http-addr", "nonsense"},
		"nats config":    {"serve", "--data", t.TempDir(), "--nats-config", "/does/not/exist.conf"},
		"replicas":       {"serve", "--data", t.TempDir(), "--replicas", "7"},
		"replicas alone": {"serve", "--data", t.TempDir(), "--replicas", "3"},
		"cluster addr":   {"serve", "--data", t.TempDir(), "--routes", "nats://127.0.0.1:6222"},
		"routes":         {"serve", "--data", t.TempDir(), "--cluster-addr", "127.0.0.1:6222", "--routes", "http://x:1"},
		"sync":           {"serve", "--data", t.TempDir(), "--jetstream-sync", "sometimes"},
	}
	want := map[string]string{"http addr": "--http-addr", "replicas": "--replicas", "replicas alone": "needs a cluster",
		"cluster addr": "--cluster-addr", "routes": "--routes", "sync": "--jetstream-sync"}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			code, _, stderr := cli(t, args...)
			if code != exitUsage || stderr == "" || !strings.Contains(stderr, want[name]) {
				t.Fatalf("exit %d, stderr %q; want exit %d naming %q", code, stderr, exitUsage, want[name])
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refused after %s, want at once", d)
			}
		})
	}
}

func TestSecondServeOnSameDataFindsEarlierEvents(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir)
	code, out, _ := cli(t, "ask", "--url", s.info.HTTPURL, "--json", "remember me")
	if code != exitCompleted {
		t.Fatalf("ask exit %d", code)
	}
	first := frames(t, out)
	wf := first[0]["workflow_id"].(string)
	if err := s.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	s2 := startServe(t, dir)
	code, out, _ = cli(t, "watch", "--url", s2.info.HTTPURL, "--json", wf)
	if code != exitCompleted {
		t.Fatalf("watch after restart: exit %d", code)
	}
	again := frames(t, out)
	if len(again) != len(first) || again[0]["epoch"] != first[0]["epoch"] || again[len(again)-1]["offset"] != first[len(first)-1]["offset"] {
		t.Fatalf("after restart: %d frames (epoch %v), before: %d (epoch %v)", len(again), again[0]["epoch"], len(first), first[0]["epoch"])
	}
	// And the restarted server still runs new workflows.
	if code, _, _ := cli(t, "ask", "--url", s2.info.HTTPURL, "again"); code != exitCompleted {
		t.Fatalf("ask after restart: exit %d", code)
	}
	resp, err := http.Get(s2.info.HTTPURL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz after restart: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestServeReportsIncompatibleStreams(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir)
	_ = s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := serve(ctx, serveFlags{data: dir, natsAddr: "127.0.0.1:-1", httpAddr: "127.0.0.1:0", logLevel: "error",
		eventsMaxAge: time.Hour}, nil)
	if err == nil || !strings.Contains(err.Error(), "AGENTBUS_EVENTS") || !strings.Contains(err.Error(), "max age") {
		t.Fatalf("want an incompatible-config error naming the stream and field, got %v", err)
	}
}

// rawSubmit publishes a workflow submission the way any NATS client can:
// CloudEvents binary-mode headers and JSON data, no agentbus code.
func rawSubmit(t *testing.T, js jetstream.JetStream, subject string, header map[string]string, data string) {
	t.Helper()
	m := nats.NewMsg(subject)
	for k, v := range header {
		m.Header.Set(k, v)
	}
	m.Data = []byte(data)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatalf("publish: %v", err)
	}
}
