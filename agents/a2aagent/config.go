package a2aagent

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"
)

// Config configures a Remote. The zero value of every field but Endpoint
// means its default.
type Config struct {
	// Endpoint is the remote agent.
	Endpoint Endpoint
	// Refresh is how often the card is fetched again while it answers (on
	// the worker's heartbeat, so at most that often); default 30s. A card
	// that did not answer is asked again on every heartbeat, at most once
	// a second.
	Refresh time.Duration
	// CardTimeout bounds a fetch of the card at start and before a step
	// of an agent whose card last failed; default 10s. (On a heartbeat, the
	// heartbeat's own bound applies.)
	CardTimeout time.Duration
	// CancelTimeout bounds the tasks/cancel sent when a step's context
	// ends; default 5s.
	CancelTimeout time.Duration
	// PollInterval is the first wait between tasks/get of an agent that
	// does not stream; it doubles up to PollMax. Defaults 100ms and 2s.
	PollInterval, PollMax time.Duration
	// Transport carries the requests (the endpoint's headers are added to
	// each); default a clone of http.DefaultTransport.
	Transport http.RoundTripper
	// Getenv reads the endpoint's header values; default os.Getenv.
	Getenv func(string) string
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Refresh, 30*time.Second)
	def(&c.CardTimeout, 10*time.Second)
	def(&c.CancelTimeout, 5*time.Second)
	def(&c.PollInterval, 100*time.Millisecond)
	def(&c.PollMax, 2*time.Second)
	if c.Transport == nil {
		c.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	errs := []error{c.Endpoint.Validate()}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"refresh", c.Refresh}, {"card timeout", c.CardTimeout}, {"cancel timeout", c.CancelTimeout}, {"poll interval", c.PollInterval}} {
		if d.d <= 0 {
			errs = append(errs, fmt.Errorf("a2aagent: %s %s is not positive", d.name, d.d))
		}
	}
	if c.PollMax < c.PollInterval {
		errs = append(errs, fmt.Errorf("a2aagent: poll max %s below poll interval %s", c.PollMax, c.PollInterval))
	}
	return errors.Join(errs...)
}
