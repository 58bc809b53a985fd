package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

// TestFollowTenantSurvivesConsumerServerLoss: a tenant follower connected
// to its own server, whose consumer lives on another server that is
// killed, goes on with the events published meanwhile, once each, in
// order (as TestFollowInProcessSurvivesConsumerServerLossAndReturn does
// for Follow).
func TestFollowTenantSurvivesConsumerServerLoss(t *testing.T) {
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
	first := publishEvent(t, admin, "w1", 1)
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
			_ = local.FollowTenant(fctx, tenant, first-1, func(_ context.Context, r bus.Record) error {
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
	prev := first
	for n := 2; n <= 4; n++ {
		publishEventEventually(t, admin, "w1", n)
		r := recv(t, got, "an event while the consumer's server is down")
		if r.Offset <= prev || r.Envelope.ID != statusEvent(t, "w1", n).ID {
			t.Fatalf("got %s at %d after %d, want w1's event %d", r.Envelope.ID, r.Offset, prev, n)
		}
		prev = r.Offset
	}
	if gap := time.Since(lost); gap > 10*time.Second {
		t.Errorf("the tenant follower stalled %s (want under 10s)", gap)
	}
}
