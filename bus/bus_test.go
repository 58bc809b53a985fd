package bus_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// closedPort is an address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestConnectSaysItIsRetrying: with nothing listening, Connect logs at
// once which URL it retries, then gives up when ctx ends with
// ErrUnreachable naming the URL.
func TestConnectSaysItIsRetrying(t *testing.T) {
	t.Parallel()
	url := "nats://" + closedPort(t)
	var logs syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err := bus.Connect(ctx, bus.Config{URL: url, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if !errors.Is(err, bus.ErrUnreachable) || !strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Connect = %v, want ErrUnreachable naming %s and why", err, url)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `msg="nats not reachable; retrying" url=`+url+" attempt=1") ||
		!strings.Contains(lines[0], "giving_up_in=") {
		t.Fatalf("log %q: want one line (the first attempt) naming the URL and when it gives up", logs.String())
	}
}

// TestConnectRefusedAuthorizationAtOnce: a server that refuses the
// credentials ends Connect at once with ErrAuthorization, no retries.
func TestConnectRefusedAuthorizationAtOnce(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte("authorization { user: a, password: b }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := bus.StartServer(bus.ServerConfig{DataDir: t.TempDir(), Addr: "127.0.0.1:-1", ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err = bus.Connect(ctx, bus.Config{URL: srv.ClientURL(), Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, bus.ErrAuthorization) {
		t.Fatalf("Connect without credentials = %v, want ErrAuthorization", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s: retried a refused authorization", took)
	}
}
