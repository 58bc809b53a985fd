package bus_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
)

// A broker.Server is what Connect takes in-process.
var _ bus.InProcessServer = (*broker.Server)(nil)

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
	srv, err := broker.Start(broker.Config{DataDir: t.TempDir(), Addr: "127.0.0.1:-1", ConfigFile: conf})
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

// TestConnectInProcess: Connect reaches a broker.Server of this process
// without a socket.
func TestConnectInProcess(t *testing.T) {
	t.Parallel()
	srv, err := broker.Start(broker.Config{DataDir: t.TempDir(), Addr: "127.0.0.1:-1"})
	if err != nil {
		t.Fatalf("broker.Start: %v", err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	srv.LogTo(slog.New(slog.NewTextHandler(io.Discard, nil)))

	b, err := bus.Connect(testCtx(t), bus.Config{URL: srv.ClientURL(), InProcess: srv, Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatalf("Connect in-process: %v", err)
	}
	if err := b.Provision(testCtx(t), bus.StreamsConfig{}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	publishEvent(t, b, "w1", 1)
	b.Close()
	b.Close() // safe twice
	if !b.Conn().IsClosed() {
		t.Error("connection still open after Close")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

func TestConnectNeedsURL(t *testing.T) {
	t.Parallel()
	if _, err := bus.Connect(testCtx(t), bus.Config{}); err == nil {
		t.Fatal("Connect with an empty config succeeded")
	}
}

func TestConnectRetriesUntilContextEnds(t *testing.T) {
	t.Parallel()
	// Something that is not NATS holds the port: it hangs up at once, so
	// every attempt fails fast and no other test's server can take the port.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	url := "nats://" + l.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	_, err = bus.Connect(ctx, bus.Config{URL: url, Logger: bustest.Logger(t)})
	if err == nil || !strings.Contains(err.Error(), url) {
		t.Fatalf("Connect to %s = %v, want an error naming the URL once ctx ends", url, err)
	}
	if ctx.Err() == nil {
		t.Errorf("Connect gave up before its context ended: %v", err)
	}
}
