package bus_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
)

func TestConnectInProcess(t *testing.T) {
	t.Parallel()
	srv, err := bus.StartServer(bus.ServerConfig{DataDir: t.TempDir(), Addr: "127.0.0.1:-1"})
	if err != nil {
		t.Fatalf("StartServer: %v", err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	srv.LogTo(slog.New(slog.NewTextHandler(io.Discard, nil)))

	b, err := bus.Connect(testCtx(t), bus.Config{Server: srv, Logger: bustest.Logger(t)})
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

func TestConnectNeedsURLOrServer(t *testing.T) {
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

// TestStartServerPortInUse: a taken client port is reported at once as
// such, not after ReadyTimeout as "not ready".
func TestStartServerPortInUse(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	addr := l.Addr().String()
	start := time.Now()
	srv, err := bus.StartServer(bus.ServerConfig{DataDir: t.TempDir(), Addr: addr, ReadyTimeout: time.Minute})
	if err == nil {
		_ = srv.Shutdown(context.Background())
		t.Fatalf("StartServer on %s, already in use, succeeded", addr)
	}
	var le *bus.ListenError
	if !errors.As(err, &le) || !errors.Is(err, syscall.EADDRINUSE) || err.Error() != "bus: nats listen "+addr+": address already in use" {
		t.Errorf("StartServer on a used port = %v, want a ListenError: address already in use", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s to report the taken port", took)
	}
}

// TestStartServerFatalAtOnce: a listener of the configuration file that
// cannot be opened (here the monitoring port) fails the start with the
// server's own message at once, not after ReadyTimeout.
func TestStartServerFatalAtOnce(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte("http: \""+l.Addr().String()+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	srv, err := bus.StartServer(bus.ServerConfig{DataDir: t.TempDir(), Addr: "127.0.0.1:-1", ConfigFile: conf, ReadyTimeout: time.Minute})
	if err == nil {
		_ = srv.Shutdown(context.Background())
		t.Fatal("StartServer with a taken monitoring port succeeded")
	}
	if !errors.Is(err, bus.ErrServerFailed) || !strings.Contains(err.Error(), "monitor") {
		t.Errorf("StartServer = %v, want ErrServerFailed with the server's message", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s to report the failure", took)
	}
}
