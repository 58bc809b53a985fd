package broker_test

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

	"github.com/agentbus/agentbus/broker"
)

// TestShutdownTwice: a started server answers on its client URL, stores
// under its data directory, and stops; a second Shutdown does nothing.
func TestShutdownTwice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, err := broker.Start(broker.Config{DataDir: dir, Addr: "127.0.0.1:-1"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	srv.LogTo(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if u := srv.ClientURL(); !strings.HasPrefix(u, "nats://127.0.0.1:") {
		t.Errorf("ClientURL() = %q, want nats://127.0.0.1:PORT", u)
	}
	if got := srv.DataDir(); !strings.HasPrefix(got, dir) {
		t.Errorf("DataDir() = %q, want it under %q", got, dir)
	}
	if srv.Clustered() || srv.ClusterName() != "" || srv.Name() != "agentbus" {
		t.Errorf("alone: Clustered %v, ClusterName %q, Name %q; want false, \"\", \"agentbus\"", srv.Clustered(), srv.ClusterName(), srv.Name())
	}
	c, err := srv.InProcessConn()
	if err != nil {
		t.Fatalf("InProcessConn: %v", err)
	}
	c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

// TestStartPortInUse: a taken client port is reported at once as such,
// not after ReadyTimeout as "not ready".
func TestStartPortInUse(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	addr := l.Addr().String()
	start := time.Now()
	srv, err := broker.Start(broker.Config{DataDir: t.TempDir(), Addr: addr, ReadyTimeout: time.Minute})
	if err == nil {
		_ = srv.Shutdown(context.Background())
		t.Fatalf("Start on %s, already in use, succeeded", addr)
	}
	var le *broker.ListenError
	if !errors.As(err, &le) || !errors.Is(err, syscall.EADDRINUSE) || err.Error() != "broker: nats listen "+addr+": address already in use" {
		t.Errorf("Start on a used port = %v, want a ListenError: address already in use", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s to report the taken port", took)
	}
}

// TestStartFatalAtOnce: a listener of the configuration file that cannot
// be opened (here the monitoring port) fails the start with the server's
// own message at once, not after ReadyTimeout.
func TestStartFatalAtOnce(t *testing.T) {
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
	srv, err := broker.Start(broker.Config{DataDir: t.TempDir(), Addr: "127.0.0.1:-1", ConfigFile: conf, ReadyTimeout: time.Minute})
	if err == nil {
		_ = srv.Shutdown(context.Background())
		t.Fatal("Start with a taken monitoring port succeeded")
	}
	if !errors.Is(err, broker.ErrStartFailed) || !strings.Contains(err.Error(), "monitor") {
		t.Errorf("Start = %v, want ErrStartFailed with the server's message", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s to report the failure", took)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing.conf")
	tests := []struct {
		name string
		cfg  broker.Config
		want []string
	}{
		{"valid", broker.Config{Addr: "127.0.0.1:4222"}, nil},
		{"random port", broker.Config{Addr: "127.0.0.1:-1"}, nil},
		{"no port", broker.Config{Addr: "nohostport"}, []string{`"nohostport"`}},
		{"port out of range", broker.Config{Addr: "127.0.0.1:70000"}, []string{`port "70000"`}},
		{"port not a number", broker.Config{Addr: "127.0.0.1:http"}, []string{`port "http"`}},
		{"empty host", broker.Config{Addr: ":4222"}, []string{"host is empty"}},
		{"bad address and missing config file", broker.Config{Addr: "nohostport", ConfigFile: missing},
			[]string{`"nohostport"`, "missing.conf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkProblems(t, tt.cfg.Validate(), tt.want)
		})
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	t.Parallel()
	_, err := broker.Start(broker.Config{DataDir: t.TempDir(), Addr: "127.0.0.1:70000"})
	if err == nil || !strings.Contains(err.Error(), "70000") {
		t.Fatalf("Start with port 70000: err = %v, want a validation error naming the port", err)
	}
}

// checkProblems checks that err joins exactly one problem per want, each
// containing its substring.
func checkProblems(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("Validate() = %v, want nil", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("Validate() = nil, want %d problems", len(want))
	}
	var problems []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		problems = j.Unwrap()
	} else {
		problems = []error{err}
	}
	if len(problems) != len(want) {
		t.Errorf("Validate() joined %d problems, want %d: %v", len(problems), len(want), err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() = %q, want a problem mentioning %q", err, w)
		}
	}
	for _, p := range problems {
		if !strings.HasPrefix(p.Error(), "broker: ") {
			t.Errorf("problem %q lacks the \"broker: \" prefix", p)
		}
	}
}
