package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/subjects"
)

// Config says how to reach NATS. URL is required.
type Config struct {
	// URL is the server's nats:// client URL (several, comma-separated,
	// fail over between them).
	URL string
	// InProcess, if set, is a server in this process (a *broker.Server)
	// that Connect reaches without a socket; URL is then that server's
	// client URL, named in logs and errors.
	InProcess InProcessServer
	// Name is the connection name shown by the server (e.g. "agentbus-orchestrator").
	Name string
	// Logger receives connection state changes; default slog.Default().
	Logger *slog.Logger
	// Options are extra nats.go options (credentials, TLS).
	Options []nats.Option
	// ElectionWait is how long a publish that meets a stream without a
	// leader (election.go) is tried again when its context has no
	// deadline; default DefaultElectionWait, negative: not at all.
	ElectionWait time.Duration
}

// InProcessServer is a NATS server in this process that Connect reaches
// without a socket; *broker.Server is one. It is an interface, declared
// here, so that bus does not link the server.
type InProcessServer interface {
	InProcessConn() (net.Conn, error)
}

// Bus is a NATS connection with JetStream. It is safe for concurrent use.
type Bus struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	log *slog.Logger
	// electionWait is Config.ElectionWait.
	electionWait time.Duration
	// objects is the uploads object store once opened (uploads.go).
	objects objectStoreCache
	// payloads is the large payloads' object store once opened (payloads.go).
	payloads objectStoreCache
	// queues holds the queue consumers made so far, by name (queue.go).
	queues sync.Map
	// ops counts what it asked of JetStream (ops.go).
	ops *ops
	// live is whether Follow can go without a consumer (follow_live.go).
	live liveMode
	// following counts the Follow calls under way.
	following atomic.Int64
	// reconnects counts the connection's reconnects: a live follower
	// reads at once what was stored while it was away (follow_live.go).
	reconnects *atomic.Uint64
	// fewWaiting holds the durable consumers whose MaxWaiting was read
	// (maxWaiting): one made elsewhere with fewer is reported once.
	fewWaiting sync.Map
	// dropLive, set by tests only, loses live events it returns true for.
	dropLive func(seq uint64) bool
	// beforeWatch, set by tests only, runs when a live follower has read
	// what was stored and is about to start its watch.
	beforeWatch func()
}

// ErrUnreachable is matched by Connect's error when no NATS server
// answered before ctx ended.
var ErrUnreachable = errors.New("bus: nats not reachable")

// ErrAuthorization is matched by Connect's error when the server refused
// the credentials; Connect does not retry it.
var ErrAuthorization = nats.ErrAuthorization

// Connect dials NATS and opens JetStream. It retries the initial connection
// until ctx ends, so a process may start before its server, and logs that
// it does so at once and then every few seconds.
func Connect(ctx context.Context, cfg Config) (*Bus, error) {
	if cfg.URL == "" {
		return nil, errors.New("bus: config needs URL (with InProcess too: the server's client URL)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Name == "" {
		cfg.Name = "agentbus"
	}
	if cfg.ElectionWait == 0 {
		cfg.ElectionWait = DefaultElectionWait
	}
	log := cfg.Logger
	reconnects := new(atomic.Uint64)
	opts := append([]nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			reconnects.Add(1)
			log.Info("nats reconnected", "url", c.ConnectedUrl())
		}),
		// Asynchronous errors (a slow consumer dropping messages, a
		// permissions violation) are otherwise printed by nats.go itself;
		// route them to the log with the subscription's subject.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			if p, perr := subjects.Parse(subj); perr == nil && p.Kind == "live" && errors.Is(err, nats.ErrSlowConsumer) {
				// A live follower reads what its subscription dropped
				// from the stream (follow_live.go).
				log.Debug("live follower behind its events: reading the dropped ones from the stream", "subject", subj)
				return
			}
			log.Warn("nats asynchronous error", "subject", subj, "err", err)
		}),
	}, cfg.Options...)
	if cfg.InProcess != nil {
		opts = append(opts, nats.InProcessServer(cfg.InProcess))
	}
	nc, err := dial(ctx, cfg.URL, opts, log)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bus: jetstream: %w", err)
	}
	return &Bus{nc: nc, js: js, log: log, electionWait: max(cfg.ElectionWait, 0), ops: &ops{}, reconnects: reconnects}, nil
}

// retryLogEvery is how often Connect logs that it is still retrying.
const retryLogEvery = 5 * time.Second

// dial connects to url, retrying with backoff (250 ms doubling to 2 s)
// until ctx ends; a refused authorization ends it at once.
func dial(ctx context.Context, url string, opts []nats.Option, log *slog.Logger) (*nats.Conn, error) {
	start := time.Now()
	wait := 250 * time.Millisecond
	var logged time.Time
	for attempt := 1; ; attempt++ {
		nc, err := nats.Connect(url, opts...)
		if err == nil {
			if attempt > 1 {
				log.Info("nats connected", "url", nc.ConnectedUrl(), "attempts", attempt, "after", time.Since(start).Round(time.Millisecond))
			}
			return nc, nil
		}
		if errors.Is(err, nats.ErrAuthorization) {
			return nil, fmt.Errorf("bus: connect %s: %w", url, err)
		}
		if errors.Is(err, nats.ErrNoServers) {
			err = errors.New("no server answered (connection refused)")
		}
		if time.Since(logged) >= retryLogEvery {
			logged = time.Now()
			args := []any{"url", url, "attempt", attempt, "err", err}
			if d, ok := ctx.Deadline(); ok {
				args = append(args, "giving_up_in", time.Until(d).Round(time.Second))
			}
			log.Warn("nats not reachable; retrying", args...)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w at %s after %d attempts in %s: %w", ErrUnreachable, url, attempt, time.Since(start).Round(time.Millisecond), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
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

// Reconnected returns a channel that receives a value (coalesced) each
// time the connection is established again after it was lost, until ctx
// ends. A KV watch rides an ordered consumer that recovers from a server
// restart only once it has missed its heartbeats, seconds later; a reader
// that must not lag that long watches again on this signal.
func (b *Bus) Reconnected(ctx context.Context) <-chan struct{} {
	st := b.nc.StatusChanged(nats.CONNECTED)
	out := make(chan struct{}, 1)
	go func() {
		defer b.nc.RemoveStatusListener(st)
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-st:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out
}
