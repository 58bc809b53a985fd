package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestQuotaFlagsRejectBadValues: a bad quota table or a negative quota
// stops serve and gateway before anything starts, naming the flag and
// the JSON pointer.
func TestQuotaFlagsRejectBadValues(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "quotas.json")
	if err := os.WriteFile(bad, []byte(`{"acme": {"running": -1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		env  string
		says []string
	}{
		{"file", []string{"serve", "--data", dir, "--quotas", bad}, "", []string{"--quotas " + bad, "/acme/running"}},
		{"missing file", []string{"gateway", "--quotas", filepath.Join(dir, "nope.json")}, "", []string{"nope.json", "no such file"}},
		{"inline env", []string{"gateway"}, `{"Acme": {}}`, []string{"inline JSON", "/Acme"}},
		{"negative default", []string{"gateway", "--quota-running", "-2"}, "", []string{"quota running", "-2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("AGENTBUS_QUOTAS", c.env)
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

// TestAskIdempotencyKeyAndQuota: ask --idempotency-key twice follows one
// workflow; a malformed key is a usage error; and serve's --quotas reach
// the gateway: past the tenant's queued-steps quota, ask is refused with
// the 429's message.
func TestAskIdempotencyKeyAndQuota(t *testing.T) {
	f := serveFlags{data: t.TempDir()}
	if err := f.quotas.table.Set(`{"default": {"queued_steps": 1}}`); err != nil || f.quotas.check() != nil {
		t.Fatalf("Set: %v, check: %v", err, f.quotas.check())
	}
	s := startServeWith(t, f, 20*time.Second)
	workflow := regexp.MustCompile(`workflow (\S+) \(tenant`)
	var ids []string
	for i := range 2 {
		code, out, stderr := cli(t, "ask", "--url", s.info.HTTPURL, "--plain", "--idempotency-key", "cli-key-1", "hello once")
		if code != exitCompleted {
			t.Fatalf("ask %d: exit %d\n%s\n%s", i, code, out, stderr)
		}
		m := workflow.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("ask %d printed no workflow id:\n%s", i, out)
		}
		ids = append(ids, m[1])
		if replayed := strings.Contains(stderr, "following its workflow"); replayed != (i == 1) {
			t.Errorf("ask %d: stderr %q; want the replay said on the second only", i, stderr)
		}
	}
	if ids[0] != ids[1] {
		t.Errorf("the same key followed workflows %s and %s", ids[0], ids[1])
	}
	if code, _, stderr := cli(t, "ask", "--url", s.info.HTTPURL, "--idempotency-key", "not a key", "q"); code != exitUsage || !strings.Contains(stderr, "--idempotency-key") {
		t.Errorf("a malformed key: exit %d %s", code, stderr)
	}

	nc, err := nats.Connect(s.info.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, "agentbus.default.step.nobody", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	// The gateway reuses a count for a second: ask until it reads the
	// step, within a deadline, rather than sleep.
	var code int
	var stderr string
	for until := time.Now().Add(5 * time.Second); time.Now().Before(until); {
		if code, _, stderr = cli(t, "ask", "--url", s.info.HTTPURL, "--plain", "one too many"); code != exitCompleted {
			break
		}
	}
	if code != exitUsage || !strings.Contains(stderr, "429") || !strings.Contains(stderr, "steps queued or running, its quota is 1") {
		t.Errorf("ask past the quota: exit %d %s", code, stderr)
	}
}
