package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// deadPort is an address where nothing listens.
func deadPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// runFor runs the CLI in-process with a deadline and returns the exit
// code, stderr and how long it took.
func runFor(t *testing.T, within time.Duration, args ...string) (int, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var out, errb strings.Builder
	start := time.Now()
	code := run(ctx, args, &out, &errb)
	return code, errb.String(), time.Since(start)
}

// TestRolesNATSUnreachable: worker, orchestrator and gateway with nothing
// at --nats log at once that they retry which URL, give up after
// --connect-timeout (flag or environment) with what to check, exit 3.
func TestRolesNATSUnreachable(t *testing.T) {
	url := "nats://" + deadPort(t)
	for _, tc := range []struct {
		name string
		args []string
		env  bool
	}{
		{"worker", []string{"worker", "--capabilities", "echo"}, false},
		{"orchestrator", []string{"orchestrator"}, false},
		{"gateway", []string{"gateway", "--http-addr", "127.0.0.1:0"}, false},
		{"worker with AGENTBUS_CONNECT_TIMEOUT", []string{"worker", "--capabilities", "echo"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.args, "--nats", url)
			if tc.env {
				t.Setenv("AGENTBUS_CONNECT_TIMEOUT", "1s")
			} else {
				args = append(args, "--connect-timeout", "1s")
			}
			code, stderr, took := runFor(t, 20*time.Second, args...)
			for _, want := range []string{
				`msg="nats not reachable; retrying" url=` + url + " attempt=1",
				"agentbus: nats not reachable at " + url,
				"connection refused",
				"gave up after --connect-timeout 1s",
				"Check the URL (--nats " + url + "), that nats-server or `agentbus serve` is running",
				"credentials",
			} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if code != exitUsage || took > 5*time.Second {
				t.Errorf("exit %d after %s: want %d after about 1s", code, took, exitUsage)
			}
		})
	}
}

// TestRoleStoppedWhileConnecting: a role interrupted (its context ends)
// while it retries NATS exits 0, as after any clean shutdown.
func TestRoleStoppedWhileConnecting(t *testing.T) {
	code, stderr, _ := runFor(t, 500*time.Millisecond, "orchestrator", "--nats", "nats://"+deadPort(t), "--connect-timeout", "1m")
	if code != exitCompleted || !strings.Contains(stderr, "stopped before connecting to NATS") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

func TestConnectTimeoutMustBePositive(t *testing.T) {
	code, stderr, _ := runFor(t, 10*time.Second, "worker", "--connect-timeout", "0s")
	if code != exitUsage || !strings.Contains(stderr, "--connect-timeout 0s: want a positive duration") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
