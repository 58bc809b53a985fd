package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/bus"
)

// errStopped is returned by dial when the process was asked to stop
// (SIGINT, SIGTERM) before it connected; stoppable ends the command with
// status 0, as after any clean shutdown.
var errStopped = errors.New("stopped before connecting to NATS")

// natsFlags are the flags of every role that joins an external NATS
// (worker, orchestrator, gateway).
type natsFlags struct {
	nats, logLevel string
	connectTimeout time.Duration
}

func (f *natsFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.nats, "nats", "nats://127.0.0.1:4222", "NATS server URL(s), comma-separated")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.DurationVar(&f.connectTimeout, "connect-timeout", 30*time.Second, "how long to keep retrying the first connection to NATS before giving up")
}

// logger is the role's logger, writing to w.
func (f *natsFlags) logger(w io.Writer) (*slog.Logger, error) { return newLogger(w, f.logLevel) }

// dial connects to NATS, retrying (and saying so in the log) for up to
// --connect-timeout; giving up says what to check.
func (f *natsFlags) dial(ctx context.Context, name string, log *slog.Logger) (*bus.Bus, error) {
	if f.connectTimeout <= 0 {
		return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("--connect-timeout %s: want a positive duration", f.connectTimeout)}
	}
	cctx, cancel := context.WithTimeout(ctx, f.connectTimeout)
	defer cancel()
	b, err := bus.Connect(cctx, bus.Config{URL: f.nats, Name: name, Logger: log})
	switch {
	case err == nil:
		return b, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%w at %s", errStopped, f.nats)
	case errors.Is(err, bus.ErrAuthorization):
		return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("NATS at %s refused the credentials; check the user, password or token in --nats (nats://user:password@host:port)", f.nats)}
	case errors.Is(err, bus.ErrUnreachable):
		return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("%s; gave up after --connect-timeout %s. Check the URL (--nats %s), that nats-server or `agentbus serve` is running and reachable from this host, and the credentials",
			strings.TrimPrefix(err.Error(), "bus: "), f.connectTimeout, f.nats)}
	}
	return nil, &exitError{code: exitUsage, msg: err.Error()}
}

// stoppable wraps the RunE of a long-running role (serve, worker,
// orchestrator, gateway): once the process was asked to stop (SIGINT,
// SIGTERM: its context ended), whatever the role was doing — starting,
// connecting, indexing the sample corpus — ends in a clean exit, status 0,
// with what was cut short on stderr, so that Ctrl-C is never reported as a
// failure (nor by make as "Error").
func stoppable(run func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		if err != nil && cmd.Context().Err() != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "agentbus: stopped: %v\n", err)
			return nil
		}
		return err
	}
}
