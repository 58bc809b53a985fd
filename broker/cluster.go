package broker

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ClusterConfig joins the embedded server to a NATS cluster: the servers
// route to one another, elect a JetStream meta leader and replicate
// streams across them. The zero value runs the server alone.
type ClusterConfig struct {
	// Name is the cluster's name, the same on every server; default "agentbus".
	Name string
	// Addr is the route listen address HOST:PORT other servers dial.
	Addr string
	// Routes are the other servers' route URLs (nats://host:6222 or
	// nats-route://host:6222); a server's own address may be listed too,
	// so every server can be given the same list.
	Routes []string
}

// On reports whether the server is to join a cluster.
func (c ClusterConfig) On() bool { return c.Addr != "" || len(c.Routes) > 0 }

// Validate reports every problem with the cluster settings at once, each
// naming the setting.
func (c ClusterConfig) Validate() error {
	if !c.On() {
		return nil
	}
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("broker: cluster address: routes are set, so the server needs a route listen address HOST:PORT"))
	} else if err := validHostPort(c.Addr, false); err != nil {
		errs = append(errs, fmt.Errorf("broker: cluster address %q: %w", c.Addr, err))
	}
	if strings.ContainsAny(c.Name, " \t.*>") {
		errs = append(errs, fmt.Errorf("broker: cluster name %q: want one word without spaces, '.', '*' or '>'", c.Name))
	}
	for i, r := range c.Routes {
		u, err := url.Parse(r)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("broker: route %d %q: %w", i+1, r, err))
		case u.Scheme != "nats" && u.Scheme != "nats-route":
			errs = append(errs, fmt.Errorf("broker: route %d %q: want nats://HOST:PORT or nats-route://HOST:PORT", i+1, r))
		default:
			if err := validHostPort(u.Host, false); err != nil {
				errs = append(errs, fmt.Errorf("broker: route %d %q: %w", i+1, r, err))
			}
		}
	}
	return errors.Join(errs...)
}

// validHostPort checks HOST:PORT; random allows port -1.
func validHostPort(addr string, random bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want HOST:PORT: %w", err)
	}
	p, err := strconv.Atoi(port)
	low := 1
	if random {
		low = -1
	}
	if err != nil || p < low || p > 65535 {
		return fmt.Errorf("port %q is not a number in [%d, 65535]", port, low)
	}
	if host == "" {
		return errors.New("host is empty")
	}
	return nil
}

// SyncConfig says how often the JetStream file store is flushed to disk.
// The zero value keeps the server's default (every two minutes): a server
// killed before a flush can lose messages it had acknowledged, which
// agentbus's orchestrator repairs (step leases, the checkpoint scan); a
// replicated cluster loses nothing while a majority of servers survive.
type SyncConfig struct {
	// Always flushes after every write: the safest, and the slowest.
	Always bool
	// Interval flushes this often; 0 is the server's default.
	Interval time.Duration
}

// ParseSync reads a sync setting: "always", a Go duration ("1s", "100ms")
// or "" (the server's default).
func ParseSync(s string) (SyncConfig, error) {
	switch s {
	case "", "default":
		return SyncConfig{}, nil
	case "always":
		return SyncConfig{Always: true}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return SyncConfig{}, fmt.Errorf("broker: jetstream sync %q: want \"always\" or a positive duration such as 1s", s)
	}
	return SyncConfig{Interval: d}, nil
}

// String is the setting as ParseSync reads it.
func (c SyncConfig) String() string {
	switch {
	case c.Always:
		return "always"
	case c.Interval > 0:
		return c.Interval.String()
	}
	return "default"
}

// applyCluster sets the cluster and sync options on opts; a cluster block
// from a configuration file is kept where the config leaves a field empty.
func (c Config) applyCluster(opts *server.Options) {
	if c.Sync.Always {
		opts.SyncAlways = true
		if opts.SyncInterval == 0 {
			opts.SyncInterval = 2 * time.Minute
		}
	} else if c.Sync.Interval > 0 {
		opts.SyncInterval = c.Sync.Interval
	}
	cl := c.Cluster
	if !cl.On() {
		return
	}
	host, port, _ := net.SplitHostPort(cl.Addr)
	p, _ := strconv.Atoi(port)
	opts.Cluster.Host, opts.Cluster.Port = host, p
	if cl.Name != "" || opts.Cluster.Name == "" {
		opts.Cluster.Name = cmp.Or(cl.Name, "agentbus")
	}
	if len(cl.Routes) > 0 {
		opts.Routes = server.RoutesFromStr(strings.Join(cl.Routes, ","))
	}
}

// clusterServerName is the server name of a clustered server that was
// given none: names must differ across a JetStream cluster, so it is the
// host name and the route port.
func clusterServerName(addr string) string {
	h, _ := os.Hostname()
	_, port, _ := net.SplitHostPort(addr)
	return "agentbus-" + cmp.Or(h, "host") + "-" + port
}
