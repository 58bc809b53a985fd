package bustest

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
)

// Env is one test's NATS server and a connection to it.
type Env struct {
	Server *broker.Server
	Bus    *bus.Bus
	// URL is the server's nats:// client URL, for raw nats.go clients and
	// child processes.
	URL string
	// Dir is the server's data directory.
	Dir string
}

// Options adjust New.
type Options struct {
	// Dir reuses a data directory (to test restarts); default t.TempDir().
	Dir string
	// Streams sizes the streams; the zero value means bus defaults.
	Streams bus.StreamsConfig
	// NoProvision skips provisioning.
	NoProvision bool
	// Sync is how often the server flushes its store; default the server's.
	Sync broker.SyncConfig
}

// New starts a server on a random port with a temporary store, provisions
// agentbus's streams and buckets, and connects.
func New(t testing.TB) *Env { return NewWithOptions(t, Options{}) }

// NewWithOptions is New with options.
func NewWithOptions(t testing.TB, o Options) *Env {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	srv, err := broker.Start(broker.Config{DataDir: o.Dir, Addr: "127.0.0.1:-1", Name: "bustest", Sync: o.Sync})
	if err != nil {
		t.Fatalf("bustest: start server: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	env := &Env{Server: srv, URL: srv.ClientURL(), Dir: o.Dir}
	env.Bus = Connect(t, env)
	if !o.NoProvision {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := env.Bus.Provision(ctx, o.Streams); err != nil {
			t.Fatalf("bustest: provision: %v", err)
		}
	}
	return env
}

// Connect opens another connection to the test's server, closed at cleanup.
func Connect(t testing.TB, env *Env) *bus.Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := bus.Connect(ctx, bus.Config{URL: env.URL, Name: t.Name(), Logger: Logger(t)})
	if err != nil {
		t.Fatalf("bustest: connect: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

// Logger returns a logger that writes to the test log at debug level when
// -v is set and discards otherwise.
func Logger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := &tWriter{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// tWriter forwards to t.Log until the test's cleanup, then drops lines:
// logging after a test ends panics.
type tWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}
