package mcptool

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Config configures an Agent. Server is required; the zero value of every
// other field means its default.
type Config struct {
	Server Server
	// ConnectTimeout bounds connecting and listing the tools, at start
	// and at each reconnect; default 30s.
	ConnectTimeout time.Duration
	// RestartMin and RestartMax shape the backoff between reconnects
	// after the session ends: RestartMin, doubled each failed try, at most
	// RestartMax; a session that lived longer than RestartMax starts again
	// from RestartMin. Defaults 500ms and 30s.
	RestartMin, RestartMax time.Duration
	// Stderr receives a stdio server's standard error; default: each line
	// logged at Info by Logger.
	Stderr io.Writer
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 30 * time.Second
	}
	if c.RestartMin == 0 {
		c.RestartMin = 500 * time.Millisecond
	}
	if c.RestartMax == 0 {
		c.RestartMax = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Stderr == nil {
		c.Stderr = &logWriter{log: c.Logger.With("component", "mcptool", "mcp_server", c.Server.Name)}
	}
}

// Validate reports every problem of c, joined.
func (c Config) Validate() error {
	var errs []error
	s := c.Server
	switch {
	case !namePattern.MatchString(s.Name):
		errs = append(errs, fmt.Errorf("mcptool: server name %q must be 1-24 of a-z, 0-9 and '-'", s.Name))
	case len(s.Command) == 0 && s.URL == "":
		errs = append(errs, fmt.Errorf("mcptool: server %s: needs a Command or a URL", s.Name))
	case len(s.Command) > 0 && s.URL != "":
		errs = append(errs, fmt.Errorf("mcptool: server %s: has both a Command and a URL", s.Name))
	}
	if c.ConnectTimeout < 0 || c.RestartMin < 0 || c.RestartMax < c.RestartMin {
		errs = append(errs, errors.New("mcptool: ConnectTimeout and RestartMin must not be negative, nor RestartMax below RestartMin"))
	}
	return errors.Join(errs...)
}
