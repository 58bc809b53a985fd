package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

// allStreams are the streams behind every stream and bucket agentbus
// provisions.
var allStreams = []string{subjects.StreamWorkflows, subjects.StreamSteps, subjects.StreamReplies,
	subjects.StreamEvents, subjects.StreamDeadLetter, subjects.StreamTimers, "KV_" + subjects.BucketCheckpoints,
	"KV_" + subjects.BucketControl, "KV_" + subjects.BucketMemory, "KV_" + subjects.BucketAgents, "KV_" + subjects.BucketLeases,
	"KV_" + subjects.BucketSessions}

func clusterCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestClusterReplicas provisions R1 on a three-server cluster, asks for R3
// (refused, naming every stream with the difference), scales in place with
// UpdateReplicas while a message is in flight, and checks every stream and
// bucket then has three current replicas and kept its messages.
func TestClusterReplicas(t *testing.T) {
	c := bustest.NewCluster(t, 3)
	b := c.Connect(t)
	ctx := clusterCtx(t)
	if err := b.Provision(ctx, bus.StreamsConfig{Replicas: 1}); err != nil {
		t.Fatalf("provision R1: %v", err)
	}
	id := publishStep(t, b, "echo", 1)

	err := b.Provision(ctx, bus.StreamsConfig{Replicas: 3})
	if !errors.Is(err, bus.ErrReplicas) {
		t.Fatalf("provision R3 over R1 without UpdateReplicas: %v, want ErrReplicas", err)
	}
	for _, name := range allStreams {
		name = strings.TrimPrefix(name, "KV_")
		if !strings.Contains(err.Error(), name+" has 1 replicas, want 3 (+2)") {
			t.Errorf("the error does not name %s with its difference:\n%v", name, err)
		}
	}
	js := b.JetStream()
	if info, err := js.Stream(ctx, subjects.StreamSteps); err != nil || info.CachedInfo().Config.Replicas != 1 {
		t.Fatalf("a refused provision changed %s: %v", subjects.StreamSteps, err)
	}

	if err := b.Provision(ctx, bus.StreamsConfig{Replicas: 3, UpdateReplicas: true}); err != nil {
		t.Fatalf("provision R3 with UpdateReplicas: %v", err)
	}
	for _, name := range allStreams {
		awaitReplicas(t, js, name, 3)
	}
	s, err := js.Stream(ctx, subjects.StreamSteps)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("%s holds %d messages after scaling, want the 1 in flight (%s)", subjects.StreamSteps, n, id)
	}
	if err := b.Provision(ctx, bus.StreamsConfig{Replicas: 3}); err != nil {
		t.Errorf("provision R3 again: %v", err)
	}
}

// awaitReplicas waits until stream name has want replicas, all current.
func awaitReplicas(t *testing.T, js jetstream.JetStream, name string, want int) {
	t.Helper()
	eventually(t, func() (bool, string) {
		s, err := js.Stream(clusterCtx(t), name)
		if err != nil {
			return false, name + ": " + err.Error()
		}
		info := s.CachedInfo()
		current := 0
		if info.Cluster != nil && info.Cluster.Leader != "" {
			current = 1
			for _, p := range info.Cluster.Replicas {
				if p.Current {
					current++
				}
			}
		}
		return info.Config.Replicas == want && current == want,
			fmt.Sprintf("%s: %d replicas configured, %d current; want %d", name, info.Config.Replicas, current, want)
	})
}

// TestFollowSurvivesItsConsumersServer follows a workflow on a three-server
// R3 cluster, stops a server the follower depends on, and checks the
// follower carries on with the next events, none missed or repeated.
// Through an ordered consumer: the server hosting the consumer, or the
// events stream's leader. Live (no consumer): the stream's leader, which
// republishes each event; or the server the follower is connected to,
// whose subscription misses what is published while it reconnects.
func TestFollowSurvivesItsConsumersServer(t *testing.T) {
	for _, tc := range []struct{ victim, via string }{
		{"consumer", "consumer"}, {"stream leader", "consumer"},
		{"stream leader", "live"}, {"its own server", "live"},
	} {
		victim := tc.victim
		t.Run(victim+"/"+tc.via, func(t *testing.T) {
			c := bustest.NewCluster(t, 3)
			admin := c.Connect(t)
			ctx := clusterCtx(t)
			if err := admin.Provision(ctx, bus.StreamsConfig{Replicas: 3}); err != nil {
				t.Fatal(err)
			}
			got := make(chan bus.Record, 64)
			fctx, cancel := context.WithCancel(ctx)
			defer cancel()
			follower := c.Connect(t)
			follow := follower.Follow
			if tc.via == "consumer" {
				follow = follower.FollowWithConsumer
			}
			go func() {
				_ = follow(fctx, tenant, "w1", 0, func(_ context.Context, r bus.Record) error {
					got <- r
					return nil
				})
			}()
			for n := 1; n <= 3; n++ {
				publishEvent(t, admin, "w1", n)
				recv(t, got, "event before the loss")
			}
			js := admin.JetStream()
			name := ""
			s, err := js.Stream(ctx, subjects.StreamEvents)
			if err != nil {
				t.Fatal(err)
			}
			switch victim {
			case "consumer":
				lister := s.ListConsumers(ctx)
				for ci := range lister.Info() {
					if ci.Cluster != nil {
						name = ci.Cluster.Leader
					}
				}
			case "its own server":
				for _, n := range c.Nodes {
					if n.Server.ClientURL() == follower.Conn().ConnectedUrl() {
						name = n.Name
					}
				}
			default:
				name = s.CachedInfo().Cluster.Leader
			}
			if tc.via == "live" {
				if n := consumers(t, admin); n != 0 {
					t.Fatalf("a live follower has %d consumers on the events stream, want none", n)
				}
			}
			if name == "" {
				t.Fatal("no server to stop")
			}
			for i, n := range c.Nodes {
				if n.Name == name {
					c.Stop(i)
				}
			}
			lost := time.Now()
			var stored time.Time // when event 4 was in the stream
			for n := 4; n <= 6; n++ {
				publishEventEventually(t, admin, "w1", n)
				if n == 4 {
					stored = time.Now()
				}
			}
			for n := 4; n <= 6; n++ {
				r := recv(t, got, fmt.Sprintf("event %d after %s's server stopped", n, victim))
				var st struct {
					Message string `json:"message"`
				}
				_ = json.Unmarshal(r.Envelope.Data, &st)
				if st.Message != fmt.Sprint(n) {
					t.Fatalf("after the loss got event %q, want %d", st.Message, n)
				}
			}
			// The cluster's own recovery (a new stream leader, for the
			// publisher too) is not the follower's to shorten: its lag is
			// counted from the moment event 4 was stored.
			lag := time.Since(stored)
			t.Logf("%s's server (%s) stopped: event 4 stored %s later, the follower had it %s after that",
				victim, name, stored.Sub(lost).Round(time.Millisecond), lag.Round(time.Millisecond))
			if lag > 10*time.Second {
				t.Errorf("the follower lagged %s behind the stream (want under 10s: 3s idle, a 2s check, then a new consumer)", lag)
			}
		})
	}
}

// publishEventEventually publishes like publishEvent, retrying while the
// cluster elects a new leader.
func publishEventEventually(t *testing.T, b *bus.Bus, workflow string, n int) {
	t.Helper()
	subj, _ := subjects.Events(tenant, workflow)
	env := statusEvent(t, workflow, n)
	eventually(t, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := b.Publish(ctx, subj, env, env.ID)
		return err == nil, fmt.Sprint(err)
	})
}

// TestFollowInProcessSurvivesConsumerServerLossAndReturn is the gateway of
// a clustered serve: a follower connected in-process to its own server,
// whose consumer lives on another server that is killed and later comes
// back; events published meanwhile and after arrive once, in order.
func TestFollowInProcessSurvivesConsumerServerLossAndReturn(t *testing.T) {
	c := bustest.NewCluster(t, 3)
	admin := c.Connect(t)
	ctx := clusterCtx(t)
	if err := admin.Provision(ctx, bus.StreamsConfig{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	local, err := bus.Connect(ctx, bus.Config{URL: c.Nodes[0].Server.ClientURL(), InProcess: c.Nodes[0].Server, Name: "local", Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	got := make(chan bus.Record, 64)
	publishEvent(t, admin, "w1", 1)
	s, err := admin.JetStream().Stream(ctx, subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	victim := -1
	var fcancel context.CancelFunc
	for try := 0; try < 20 && victim < 0; try++ {
		var fctx context.Context
		fctx, fcancel = context.WithCancel(ctx)
		go func() {
			_ = local.FollowWithConsumer(fctx, tenant, "w1", 0, func(_ context.Context, r bus.Record) error {
				got <- r
				return nil
			})
		}()
		recv(t, got, "event 1")
		for ci := range s.ListConsumers(ctx).Info() {
			if ci.Cluster != nil && ci.Cluster.Leader != c.Nodes[0].Name {
				for i, n := range c.Nodes {
					if n.Name == ci.Cluster.Leader {
						victim = i
					}
				}
			}
		}
		if victim < 0 {
			fcancel()
		}
	}
	defer fcancel()
	if victim < 0 {
		t.Fatal("the follower's consumer never landed on another server")
	}
	c.Stop(victim)
	lost := time.Now()
	next := 2
	expect := func(what string) {
		t.Helper()
		r := recv(t, got, fmt.Sprintf("event %d %s", next, what))
		var st struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(r.Envelope.Data, &st)
		if st.Message != fmt.Sprint(next) {
			t.Fatalf("%s got event %q, want %d", what, st.Message, next)
		}
		next++
	}
	for range 3 {
		publishEventEventually(t, admin, "w1", next)
		expect("while the consumer's server is down")
	}
	gap := time.Since(lost)
	t.Logf("consumer's server (%s) stopped: the follower went on after %s", c.Nodes[victim].Name, gap.Round(time.Millisecond))
	if gap > 10*time.Second {
		t.Errorf("the follower stalled %s (want under 10s: 2 missed 2s heartbeats, then a new consumer)", gap)
	}
	c.Start(t, victim)
	for range 3 {
		publishEventEventually(t, admin, "w1", next)
		expect("after the server came back")
	}
}
