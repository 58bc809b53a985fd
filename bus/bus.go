package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config says how to reach NATS. Either URL or Server must be set; Server
// connects in-process, without a socket.
type Config struct {
	URL    string
	Server *Server
	// Name is the connection name shown by the server (e.g. "agentbus-orchestrator").
	Name string
	// Logger receives connection state changes; default slog.Default().
	Logger *slog.Logger
	// Options are extra nats.go options (credentials, TLS).
	Options []nats.Option
}

// Bus is a NATS connection with JetStream. It is safe for concurrent use.
type Bus struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	log *slog.Logger
}

// Connect dials NATS and opens JetStream. It retries the initial connection
// until ctx ends, so a process may start before its server.
func Connect(ctx context.Context, cfg Config) (*Bus, error) {
	if cfg.URL == "" && cfg.Server == nil {
		return nil, errors.New("bus: config needs URL or Server")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Name == "" {
		cfg.Name = "agentbus"
	}
	log := cfg.Logger
	opts := append([]nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("nats reconnected", "url", c.ConnectedUrl()) }),
		// Asynchronous errors (a slow consumer dropping messages, a
		// permissions violation) are otherwise printed by nats.go itself;
		// route them to the log with the subscription's subject.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			log.Warn("nats asynchronous error", "subject", subj, "err", err)
		}),
	}, cfg.Options...)
	url := cfg.URL
	if cfg.Server != nil {
		opts = append(opts, nats.InProcessServer(cfg.Server.Internal()))
		url = cfg.Server.ClientURL()
	}
	var nc *nats.Conn
	for {
		var err error
		nc, err = nats.Connect(url, opts...)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("bus: connect %s: %w", url, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	return &Bus{nc: nc, js: js, log: log}, nil
}

// Conn returns the underlying connection, for cmd/ wiring and tests.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// JetStream returns the JetStream context, for cmd/ wiring and tests.
func (b *Bus) JetStream() jetstream.JetStream { return b.js }

// Close drains the connection: pending publishes are flushed and
// subscriptions end after their in-flight messages. Safe to call twice.
func (b *Bus) Close() {
	if b.nc.IsClosed() {
		return
	}
	if err := b.nc.Drain(); err != nil {
		b.nc.Close()
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for !b.nc.IsClosed() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	b.nc.Close()
}
