package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ErrNotReady is returned when the embedded server does not accept
// connections within Config.ReadyTimeout.
var ErrNotReady = errors.New("broker: embedded nats-server not ready")

// ErrStartFailed is matched by Start's error when the embedded server
// gave up starting (a listener it could not open, a JetStream store
// it could not use); the message is the server's own.
var ErrStartFailed = errors.New("broker: embedded nats-server failed to start")

// ListenError is Start's error when the client (or route) address cannot
// be bound, typically because another process listens there.
// errors.Is(err, syscall.EADDRINUSE) holds for a taken port.
type ListenError struct {
	Addr string
	Err  error
	// Route is set when Addr is the cluster's route address, not the
	// client address.
	Route bool
}

// Error is "broker: nats listen 127.0.0.1:4222: address already in use".
func (e *ListenError) Error() string {
	cause := e.Err.Error()
	var errno syscall.Errno
	if errors.As(e.Err, &errno) {
		cause = errno.Error()
	}
	what := "nats"
	if e.Route {
		what = "nats cluster"
	}
	return fmt.Sprintf("broker: %s listen %s: %s", what, e.Addr, cause)
}

func (e *ListenError) Unwrap() error { return e.Err }

// Config configures the embedded nats-server. The zero value means
// defaults: data under ./data, client port 127.0.0.1:4222.
type Config struct {
	// DataDir holds the JetStream file store (under DataDir/jetstream).
	DataDir string
	// Addr is the client listen address HOST:PORT; port -1 picks a random port.
	Addr string
	// ConfigFile is an optional nats-server configuration file (e.g. the
	// repository's nats.conf); DataDir and Addr override its store_dir,
	// host and port.
	ConfigFile string
	// Name is the server name; default "agentbus", or on a cluster
	// "agentbus-<host name>-<route port>" (names differ across a cluster).
	Name string
	// Cluster joins the server to a NATS cluster; the zero value runs it
	// alone.
	Cluster ClusterConfig
	// Sync is how often JetStream flushes its store to disk.
	Sync SyncConfig
	// ReadyTimeout bounds the wait for the server to accept connections:
	// after a crash it first recovers its store, which on a large or
	// compressed one takes longer than the few ms of a clean start.
	// Default DefaultReadyTimeout; the wait is logged every 5 s.
	ReadyTimeout time.Duration
	// Logger receives the server's own log lines from the start (see
	// LogTo); nil discards them. A fatal start-up error is returned by
	// Start either way.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.DataDir == "" {
		c.DataDir = "data"
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:4222"
	}
	if c.Name == "" {
		c.Name = "agentbus"
		if c.Cluster.On() && c.Cluster.Addr != "" {
			c.Name = clusterServerName(c.Cluster.Addr)
		}
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
}

// DefaultReadyTimeout is Config.ReadyTimeout's default. It was 10 s, which
// a store recovering after kill -9 passed (make chaos with
// --compress-streams): the process then exited instead of starting late.
const DefaultReadyTimeout = 5 * time.Minute

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	var errs []error
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		errs = append(errs, fmt.Errorf("broker: nats address %q: want HOST:PORT: %w", c.Addr, err))
	} else if p, err := strconv.Atoi(port); err != nil || p < -1 || p > 65535 {
		errs = append(errs, fmt.Errorf("broker: nats address %q: port %q is not a number in [-1, 65535]", c.Addr, port))
	} else if host == "" {
		errs = append(errs, fmt.Errorf("broker: nats address %q: host is empty", c.Addr))
	}
	errs = append(errs, c.Cluster.Validate())
	if c.ConfigFile != "" {
		if _, err := os.Stat(c.ConfigFile); err != nil {
			errs = append(errs, fmt.Errorf("broker: nats config: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Server is an embedded nats-server with JetStream. It is safe for concurrent
// use; Shutdown may be called more than once.
type Server struct {
	ns       *server.Server
	opts     *server.Options
	cfg      Config
	dir      string
	shutdown sync.Once
	// log is where Shutdown says what it did: LogTo's logger, else the
	// config's.
	log *slog.Logger
}

// Start starts an embedded nats-server with JetStream on a file store
// and waits until it accepts connections.
func Start(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := &server.Options{}
	if cfg.ConfigFile != "" {
		o, err := server.ProcessConfigFile(cfg.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("broker: nats config %s: %w", cfg.ConfigFile, err)
		}
		opts = o
	}
	host, port, _ := net.SplitHostPort(cfg.Addr)
	p, _ := strconv.Atoi(port)
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("broker: data dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("broker: data dir: %w", err)
	}
	opts.Host, opts.Port = host, p
	opts.JetStream = true
	opts.StoreDir = dir
	if opts.ServerName == "" {
		opts.ServerName = cfg.Name
	}
	opts.NoSigs = true // the host process owns signals
	if opts.LameDuckDuration == 0 {
		// A clustered server stopping hands its leaderships over and
		// then closes its remaining clients (workers and gateways of
		// other processes, which reconnect to its peers) over this time,
		// not nats-server's default of two minutes.
		opts.LameDuckDuration, opts.LameDuckGracePeriod = 5*time.Second, time.Second
	}
	cfg.applyCluster(opts)
	if p > 0 {
		// Say at once that the port is taken, rather than wait for the
		// server's accept loop to fail and ReadyTimeout to pass.
		if err := probeListen(cfg.Addr); err != nil {
			return nil, err
		}
	}
	if cfg.Cluster.Addr != "" {
		if err := probeListen(cfg.Cluster.Addr); err != nil {
			var le *ListenError
			if errors.As(err, &le) {
				le.Route = true
			}
			return nil, err
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("broker: nats-server: %w", err)
	}
	log := &startLogger{fatal: make(chan string, 1)}
	if cfg.Logger != nil {
		log.serverLogger = serverLogger{cfg.Logger}
	}
	ns.SetLoggerV2(log, false, false, false)
	go ns.Start()
	if err := awaitReady(ns, log.fatal, cfg.ReadyTimeout, cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))); err != nil {
		ns.Shutdown()
		return nil, fmt.Errorf("%w (nats address %s)", err, cfg.Addr)
	}
	return &Server{ns: ns, opts: opts, cfg: cfg, dir: dir, log: cmp.Or(cfg.Logger, slog.Default())}, nil
}

// probeListen binds addr and lets it go, so that a taken port is reported
// as such before the server starts.
func probeListen(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return &ListenError{Addr: addr, Err: err}
	}
	return l.Close()
}

// awaitReady waits until ns accepts connections, reports a fatal error at
// once, or gives up after timeout.
func awaitReady(ns *server.Server, fatal <-chan string, timeout time.Duration, log *slog.Logger) error {
	start := time.Now()
	deadline, next := start.Add(timeout), start.Add(5*time.Second)
	for {
		if now := time.Now(); now.After(next) {
			log.Warn("embedded nats-server not accepting connections yet (recovering its store?)",
				"waited", now.Sub(start).Round(time.Second), "gives_up_after", timeout)
			next = now.Add(5 * time.Second)
		}
		select {
		case msg := <-fatal:
			return fmt.Errorf("%w: %s", ErrStartFailed, msg)
		default:
		}
		if ns.ReadyForConnections(50 * time.Millisecond) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w within %s", ErrNotReady, timeout)
		}
	}
}

// ClientURL is the nats:// URL clients connect to.
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// Clustered reports whether the server routes to a cluster (from
// Config.Cluster or the configuration file's cluster block).
func (s *Server) Clustered() bool { return s.ns.ClusterName() != "" && s.cfgCluster() }

func (s *Server) cfgCluster() bool { return s.opts.Cluster.Port != 0 }

// Name is the server's name, unique in its cluster.
func (s *Server) Name() string { return s.ns.Name() }

// ClusterName is the server's cluster name, "" when it runs alone.
func (s *Server) ClusterName() string {
	if !s.cfgCluster() {
		return ""
	}
	return s.ns.ClusterName()
}

// DataDir is the absolute data directory (the JetStream store lives below it).
func (s *Server) DataDir() string { return s.dir }

// InProcessConn opens a connection to the server without a socket; it
// makes *Server a nats.InProcessConnProvider, which is how bus.Config's
// InProcess connects to it without bus linking the server.
func (s *Server) InProcessConn() (net.Conn, error) { return s.ns.InProcessConn() }

// Internal returns the nats-server itself, for what Server does not wrap
// (tests ask it for the JetStream meta leader).
func (s *Server) Internal() *server.Server { return s.ns }

// LogTo routes the server's own log lines to logger at debug level (errors
// and warnings at their levels).
func (s *Server) LogTo(logger *slog.Logger) {
	s.ns.SetLoggerV2(serverLogger{logger}, false, false, false)
	s.log = logger
}

// Shutdown stops the server and waits for it to finish, or for ctx to end.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdown.Do(func() {
		done := make(chan struct{})
		go func() {
			if s.Clustered() {
				// Lame duck first: the server hands the leadership of
				// every stream, consumer and the meta group it leads to
				// a peer while it is still there to replicate, so that
				// a rolling restart costs no election timeout.
				start := time.Now()
				s.ns.LameDuckShutdown()
				s.log.Info("nats server stopped in lame duck mode: its leaderships handed to its peers", "took", time.Since(start).Round(time.Millisecond))
			}
			s.ns.Shutdown()
			s.ns.WaitForShutdown()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
		}
	})
	return ctx.Err()
}

// startLogger is the server's logger until LogTo: it forwards to a
// serverLogger when there is one and hands the first fatal message to
// Start (the server logs it and stops starting, never exiting the
// process: NoSigs and a custom logger).
type startLogger struct {
	serverLogger
	fatal chan string
}

func (s *startLogger) Fatalf(f string, v ...any) {
	msg := fmt.Sprintf(f, v...)
	select {
	case s.fatal <- msg:
	default:
	}
	if s.l != nil {
		s.l.Error(msg, "component", "nats")
	}
}

func (s *startLogger) Noticef(f string, v ...any) {
	if s.l != nil {
		s.serverLogger.Noticef(f, v...)
	}
}

func (s *startLogger) Warnf(f string, v ...any) {
	if s.l != nil {
		s.serverLogger.Warnf(f, v...)
	}
}

func (s *startLogger) Errorf(f string, v ...any) {
	if s.l != nil {
		s.serverLogger.Errorf(f, v...)
	}
}

func (s *startLogger) Debugf(f string, v ...any) {
	if s.l != nil {
		s.serverLogger.Debugf(f, v...)
	}
}

type serverLogger struct{ l *slog.Logger }

func (s serverLogger) Noticef(f string, v ...any) {
	s.l.Debug(fmt.Sprintf(f, v...), "component", "nats")
}
func (s serverLogger) Warnf(f string, v ...any) { s.l.Warn(fmt.Sprintf(f, v...), "component", "nats") }
func (s serverLogger) Fatalf(f string, v ...any) {
	s.l.Error(fmt.Sprintf(f, v...), "component", "nats")
}
func (s serverLogger) Errorf(f string, v ...any) {
	s.l.Error(fmt.Sprintf(f, v...), "component", "nats")
}
func (s serverLogger) Debugf(f string, v ...any) {
	s.l.Debug(fmt.Sprintf(f, v...), "component", "nats")
}
func (s serverLogger) Tracef(f string, v ...any) {}
