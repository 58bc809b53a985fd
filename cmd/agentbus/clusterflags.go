package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
)

// streamFlags size the streams and buckets of every role that provisions
// them (serve, orchestrator, gateway, worker).
type streamFlags struct {
	replicas      int
	updateStreams bool
	sessionTTL    time.Duration
	compress      bool
}

func (f *streamFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&f.replicas, "replicas", 1, "JetStream replicas of every stream and bucket, 1 to 5 (3 on a three-server cluster; serve with --routes defaults to 3)")
	fl.DurationVar(&f.sessionTTL, "session-ttl", bus.DefaultSessionTTL, "how long a conversation session is kept after its newest turn (bucket AGENTBUS_SESSIONS, when this process provisions it)")
	fl.BoolVar(&f.updateStreams, "update-streams", false, "change the replicas of existing streams and buckets in place to --replicas (without it a difference is reported and the process stops), and with --compress-streams compress the checkpoints and events of a store provisioned without it (from each server's next restart)")
	fl.BoolVar(&f.compress, "compress-streams", false, "store the checkpoints bucket and the events stream S2-compressed (about a fifth of the bytes at rest; checkpoints are then stored plain); off by default and unsafe where servers can be killed: nats-server 2.15.2 can leave compressed blocks it cannot read after a kill -9 (README, Compression)")
}

// config is the bus's streams configuration, events kept for maxAge.
func (f streamFlags) config(maxAge time.Duration) bus.StreamsConfig {
	return bus.StreamsConfig{EventsMaxAge: maxAge, Replicas: f.replicas, UpdateReplicas: f.updateStreams, SessionTTL: f.sessionTTL, Compress: f.compress}
}

// check reports a --replicas out of range before anything connects (0,
// unset, means 1).
func (f streamFlags) check() error {
	if f.replicas < 0 || f.replicas > 5 {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("--replicas %d: want 1 to 5 (JetStream's limit; 3 on a three-server cluster)", f.replicas)}
	}
	if f.sessionTTL != 0 && f.sessionTTL < time.Minute {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("--session-ttl %s: want at least 1m", f.sessionTTL)}
	}
	return nil
}

// provisionFailed turns a provisioning error into the process's answer:
// a replica difference names --update-streams, exit status 3.
func provisionFailed(err error) error {
	msg := err.Error()
	if errors.Is(err, bus.ErrReplicas) {
		msg += "\nstart with --update-streams to scale them in place to --replicas (JetStream keeps serving while it copies), or set --replicas to what they have"
	}
	return &exitError{code: exitUsage, msg: msg}
}

// clusterFlags join serve's embedded NATS server to a cluster of servers,
// so that three machines with nothing but the binary make one.
type clusterFlags struct {
	name, addr, serverName, sync string
	routes                       []string
}

func (f *clusterFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.name, "cluster-name", "agentbus", "NATS cluster name, the same on every server of the cluster")
	fl.StringVar(&f.addr, "cluster-addr", "", "route listen address HOST:PORT of the embedded server, e.g. 0.0.0.0:6222 (needed with --routes)")
	fl.StringSliceVar(&f.routes, "routes", nil, "route URLs of the cluster's servers, comma-separated: nats://a:6222,nats://b:6222 (this server's own may be listed)")
	fl.StringVar(&f.serverName, "server-name", "", "NATS server name, unique in the cluster (default agentbus, or agentbus-<host>-<route port> on a cluster)")
	fl.StringVar(&f.sync, "jetstream-sync", "default", `how often JetStream flushes its store to disk: "always" (after every write), an interval such as 1s, or "default" (the server's, 2m)`)
}

// server returns the embedded server's cluster and sync settings, each
// problem naming its flag.
func (f clusterFlags) server() (broker.ClusterConfig, broker.SyncConfig, error) {
	var errs []string
	sync, err := broker.ParseSync(f.sync)
	if err != nil {
		errs = append(errs, fmt.Sprintf("--jetstream-sync %q: want always, default or a positive duration such as 1s", f.sync))
	}
	cl := broker.ClusterConfig{Name: f.name, Addr: f.addr, Routes: f.routes}
	if err := cl.Validate(); err != nil {
		for _, e := range strings.Split(err.Error(), "\n") {
			errs = append(errs, flagOf(e)+strings.TrimPrefix(e, "broker: "))
		}
	}
	if len(errs) > 0 {
		return cl, sync, &exitError{code: exitUsage, msg: strings.Join(errs, "\n")}
	}
	return cl, sync, nil
}

// flagOf names the flag a broker cluster problem is about.
func flagOf(problem string) string {
	switch {
	case strings.HasPrefix(problem, "broker: cluster address"):
		return "--cluster-addr: "
	case strings.HasPrefix(problem, "broker: cluster name"):
		return "--cluster-name: "
	case strings.HasPrefix(problem, "broker: route"):
		return "--routes: "
	}
	return ""
}
