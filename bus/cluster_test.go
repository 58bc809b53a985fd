package bus_test

import (
	"context"
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
	subjects.StreamEvents, subjects.StreamDeadLetter, "KV_" + subjects.BucketCheckpoints,
	"KV_" + subjects.BucketControl, "KV_" + subjects.BucketMemory, "KV_" + subjects.BucketAgents}

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
