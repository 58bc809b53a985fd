package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
)

// readmeBlock returns the README's shell block marked
// `<!-- readme-test: name -->`, exactly as a reader would copy it.
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	return readmeBlockLang(t, name, "sh")
}

// readmeBlockLang returns the README's block in language lang marked
// `<!-- readme-test: name -->`.
func readmeBlockLang(t *testing.T, name, lang string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- readme-test: " + regexp.QuoteMeta(name) + " -->\n```" + lang + "\n(.*?)```")
	m := re.FindSubmatch(b)
	if m == nil {
		t.Fatalf("README.md has no %s block marked readme-test: %s", lang, name)
	}
	return string(m[1])
}

var natscli struct {
	once sync.Once
	dir  string
	err  error
}

// natsCLI builds the real nats CLI (a tool of this module: go tool nats)
// once per test binary and returns the directory that holds it as `nats`.
func natsCLI(t *testing.T) string {
	t.Helper()
	natscli.once.Do(func() {
		natscli.dir, natscli.err = os.MkdirTemp("", "agentbus-natscli-")
		if natscli.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(natscli.dir, "nats"), "github.com/nats-io/natscli/nats")
		if out, err := cmd.CombinedOutput(); err != nil {
			natscli.err = fmt.Errorf("building the nats CLI: %v\n%s", err, out)
		}
	})
	if natscli.err != nil {
		t.Fatal(natscli.err)
	}
	return natscli.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if natscli.dir != "" {
		_ = os.RemoveAll(natscli.dir)
	}
	os.Exit(code)
}

// runBlock runs a README block with sh -e, the nats CLI first on PATH and
// NATS_URL pointing at the test's server, and returns its output.
func (s *stack) runBlock(ctx context.Context, t *testing.T, block string) string {
	t.Helper()
	dir := natsCLI(t)
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", block)
	home := t.TempDir() // no nats contexts of the machine's user
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"NATS_URL="+s.env.URL, "HOME="+home, "XDG_CONFIG_HOME="+home, "NATS_CONTEXT=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("README block failed: %v\n%s\noutput:\n%s", err, block, out.String())
	}
	return out.String()
}

// waitEvent follows a workflow's events until one satisfies ok, and
// returns it; it fails the test at the deadline.
func (s *stack) waitEvent(ctx context.Context, t *testing.T, tenant, workflow string, ok func(events.Envelope) bool) events.Envelope {
	t.Helper()
	var got events.Envelope
	var seen []string
	err := s.env.Bus.Follow(ctx, tenant, workflow, 0, func(_ context.Context, r bus.Record) error {
		seen = append(seen, r.Envelope.Type.Short())
		if ok(r.Envelope) {
			got = r.Envelope
			return bus.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("waiting on %s/%s (saw %v): %v", tenant, workflow, seen, err)
	}
	return got
}

func TestREADMESubmitAndFollowWithNatsCLI(t *testing.T) {
	natsCLI(t) // built before the test's deadline starts: a cold build can take a minute
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*deadline)
	defer cancel()
	s.runBlock(ctx, t, readmeBlock(t, "natscli-submit"))
	end := s.waitEvent(ctx, t, "acme", "my-wf-1", func(e events.Envelope) bool { return e.Type.Terminal() })
	if end.Type != events.TypeComplete {
		t.Fatalf("the README's workflow ended with %s: %s", end.Type, end.Data)
	}
	out := s.runBlock(ctx, t, readmeBlock(t, "natscli-follow"))
	for _, want := range []string{"agentbus.acme.events.my-wf-1", string(events.TypeStatus), string(events.TypeComplete)} {
		if !strings.Contains(out, want) {
			t.Errorf("nats sub output lacks %q:\n%s", want, out)
		}
	}
}

func TestREADMECancelWithNatsCLI(t *testing.T) {
	natsCLI(t) // built before the test's deadline starts: a cold build can take a minute
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*deadline)
	defer cancel()
	if err := s.submitSleepsAs(ctx, "acme", "my-wf-2", 1, int(time.Hour.Milliseconds())); err != nil {
		t.Fatal(err)
	}
	// Cancel once the step is running, so that the cancel must stop it.
	s.waitEvent(ctx, t, "acme", "my-wf-2", func(e events.Envelope) bool { return e.Type == events.TypeProgress })
	s.runBlock(ctx, t, readmeBlock(t, "natscli-cancel"))
	end := s.waitEvent(ctx, t, "acme", "my-wf-2", func(e events.Envelope) bool { return e.Type.Terminal() })
	if end.Type != events.TypeCancelled || !strings.Contains(string(end.Data), "changed my mind") {
		t.Fatalf("after the README's bare cancel the workflow ended with %s %s, want cancelled with the reason", end.Type, end.Data)
	}
	out := s.runBlock(ctx, t, readmeBlock(t, "natscli-control-error"))
	for _, want := range []string{`/action`, `cancle`} {
		if !strings.Contains(out, want) {
			t.Errorf("the answer to a bad control request lacks %q:\n%s", want, out)
		}
	}
	t.Logf("nats req answered:\n%s", out)
}

// The README's curl example, as written but for the gateway's address:
// the submission is accepted and the event stream runs to its end.
func TestREADMECurl(t *testing.T) {
	natsCLI(t) // built before the test's deadline starts: a cold build can take a minute
	s := startStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	block := strings.ReplaceAll(readmeBlock(t, "curl"), "localhost:8080", s.Addr)
	out := s.runBlock(ctx, t, block)
	for _, want := range []string{`"workflow_id": "hello-1"`, "event: connected", "event: status", "event: complete"} {
		if !strings.Contains(out, want) {
			t.Errorf("curl output lacks %q:\n%s", want, out)
		}
	}
}
