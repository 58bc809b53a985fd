package bustest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
)

// Cluster is a test's NATS cluster: N embedded servers on loopback, routed
// to one another, each with its own store. Nodes can be stopped and
// restarted on their stores to test the loss of a server.
type Cluster struct {
	t testing.TB
	// Nodes are the servers; a stopped node's Server is nil.
	Nodes []*Node
	// Routes are every node's route URL.
	Routes []string
}

// Node is one server of a Cluster.
type Node struct {
	Name, Dir, ClientAddr, RouteAddr string
	Server                           *broker.Server
}

// URL is the node's client URL.
func (n *Node) URL() string { return "nats://" + n.ClientAddr }

// NewCluster starts an n-server cluster on loopback and waits until it has
// a JetStream meta leader. The servers are shut down at cleanup.
func NewCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	root := t.TempDir()
	addrs := FreeAddrs(t, 2*n)
	for i := range n {
		c.Nodes = append(c.Nodes, &Node{
			Name: fmt.Sprintf("n%d", i+1), Dir: filepath.Join(root, fmt.Sprintf("n%d", i+1)),
			ClientAddr: addrs[2*i], RouteAddr: addrs[2*i+1],
		})
		c.Routes = append(c.Routes, "nats://"+c.Nodes[i].RouteAddr)
	}
	for i := range c.Nodes {
		c.Start(t, i)
	}
	t.Cleanup(func() {
		for i := range c.Nodes {
			c.Stop(i)
		}
	})
	c.AwaitMetaLeader(t, 30*time.Second)
	return c
}

// URLs are the client URLs of every node, comma-separated, as a client
// that fails over between them takes them.
func (c *Cluster) URLs() string {
	var us []string
	for _, n := range c.Nodes {
		us = append(us, n.URL())
	}
	return strings.Join(us, ",")
}

// Config is node i's server configuration.
func (c *Cluster) Config(i int) broker.Config {
	n := c.Nodes[i]
	return broker.Config{DataDir: n.Dir, Addr: n.ClientAddr, Name: n.Name, ReadyTimeout: 20 * time.Second,
		Cluster: broker.ClusterConfig{Name: "bustest", Addr: n.RouteAddr, Routes: c.Routes}}
}

// Start starts node i (again) on its store.
func (c *Cluster) Start(t testing.TB, i int) {
	t.Helper()
	srv, err := broker.Start(c.Config(i))
	if err != nil {
		t.Fatalf("bustest: start %s: %v", c.Nodes[i].Name, err)
	}
	c.Nodes[i].Server = srv
}

// Stop shuts node i down; stopping a stopped node does nothing.
func (c *Cluster) Stop(i int) {
	n := c.Nodes[i]
	if n.Server == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = n.Server.Shutdown(ctx)
	n.Server = nil
}

// AwaitMetaLeader waits until a running node knows the JetStream meta leader.
func (c *Cluster) AwaitMetaLeader(t testing.TB, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, n := range c.Nodes {
			if n.Server != nil && n.Server.Internal().JetStreamIsLeader() {
				return
			}
		}
		time.Sleep(20 * time.Millisecond) // polling the server's own state, not waiting for an event
	}
	t.Fatalf("bustest: no JetStream meta leader within %s", timeout)
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago, for servers whose addresses must be known before they start (a
// cluster's routes). Several addresses for one test come from FreeAddrs:
// two calls of FreeAddr may return the same port, which the kernel hands
// out again once it is closed.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return FreeAddrs(t, 1)[0]
}

// FreeAddrs returns n distinct loopback addresses whose ports were free a
// moment ago: all n are held open together before any is released.
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("bustest: free port: %v", err)
		}
		ls = append(ls, l)
		addrs[i] = l.Addr().String()
	}
	return addrs
}

// Connect connects to the cluster's nodes (all of their URLs, so the
// connection fails over), closed at cleanup.
func (c *Cluster) Connect(t testing.TB) *bus.Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := bus.Connect(ctx, bus.Config{URL: c.URLs(), Name: t.Name(), Logger: Logger(t)})
	if err != nil {
		t.Fatalf("bustest: connect to the cluster: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}
