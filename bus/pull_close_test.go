package bus_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
)

// slowProxy forwards TCP connections to target, holding what the client
// sends for delay before passing it on, in order; the server's answers
// pass at once. It stands for a client whose writes reach the server
// later than another client's.
func slowProxy(t *testing.T, target string, delay time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", strings.TrimPrefix(target, "nats://"))
			if err != nil {
				_ = c.Close()
				continue
			}
			t.Cleanup(func() { _ = c.Close(); _ = s.Close() })
			go func() { _, _ = io.Copy(c, s) }()
			go func() {
				type chunk struct {
					b  []byte
					at time.Time
				}
				q := make(chan chunk, 1024)
				go func() {
					for ch := range q {
						time.Sleep(time.Until(ch.at))
						if _, err := s.Write(ch.b); err != nil {
							return
						}
					}
				}()
				defer close(q)
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						q <- chunk{append([]byte(nil), buf[:n]...), time.Now().Add(delay)}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return "nats://" + l.Addr().String()
}

// TestPullerCloseWaitsForTheServer: a Puller whose last request is still
// held by the server, closed on a connection whose writes reach the server
// late, has withdrawn the request by the time Close returns. A message
// published then, by another client, goes to the next puller at once
// instead of to the withdrawn request, where nobody would take it and it
// would wait out its AckWait (1 min here).
func TestPullerCloseWaitsForTheServer(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	cfg := stepsConfig(t, "echo")
	cfg.AckWait = time.Minute
	if err := env.Bus.EnsureConsumer(testCtx(t), cfg); err != nil {
		t.Fatal(err)
	}
	slow, err := bus.Connect(testCtx(t), bus.Config{URL: slowProxy(t, env.URL, 200*time.Millisecond), Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(slow.Close)
	p, err := slow.NewPuller(cfg.Stream, cfg.Durable)
	if err != nil {
		t.Fatal(err)
	}
	// A request the server holds (it waits up to 30 s for a message),
	// given up on by its caller.
	ctx, cancel := context.WithTimeout(testCtx(t), 500*time.Millisecond)
	if m, err := p.Next(ctx); err == nil {
		t.Fatalf("Next on an empty stream got %s", m.Subject())
	}
	cancel()
	p.Close()
	id := publishStep(t, env.Bus, "echo", 1) // another connection: no delay
	next, err := env.Bus.NewPuller(cfg.Stream, cfg.Durable)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	nctx, ncancel := context.WithTimeout(testCtx(t), 10*time.Second)
	defer ncancel()
	m, err := next.Next(nctx)
	if err != nil {
		t.Fatalf("the next puller got nothing in 10 s (%v): the message went to the closed puller's request", err)
	}
	if got := m.Headers().Get("Nats-Msg-Id"); got != id {
		t.Fatalf("the next puller got %q, want %q", got, id)
	}
	_ = m.Ack()
}
