package orchestrator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
)

// BenchmarkReplicas runs the 10-step chain and the 16-in-flight workflows
// on a single server with R1 streams (the baseline), the same server
// flushing every write (--jetstream-sync always), and a three-server
// cluster on loopback with R3 streams — in one run, so the ratios compare
// like with like. The orchestrator and the echo agent connect to the
// cluster's servers as a deployment's would.
func BenchmarkReplicas(b *testing.B) {
	setups := []struct {
		name string
		env  func(testing.TB) *bustest.Env
	}{
		{"R1", func(t testing.TB) *bustest.Env { return bustest.New(t) }},
		{"R1-sync-always", func(t testing.TB) *bustest.Env {
			return bustest.NewWithOptions(t, bustest.Options{Sync: broker.SyncConfig{Always: true}})
		}},
		{"R3-cluster", replicatedEnv},
	}
	for _, setup := range setups {
		b.Run(setup.name, func(b *testing.B) {
			s := startOn(b, setup.env(b))
			b.Run("chain-10", func(b *testing.B) { benchChains(b, s, 10) })
			b.Run("parallel-16", func(b *testing.B) { benchParallel(b, s, 16) })
			b.Run("parallel-64", func(b *testing.B) { benchParallel(b, s, 64) })
		})
	}
}

// BenchmarkReplicaRatio runs batches of 10-step chains in flight (16, and
// 64) alternately on a single server with R1 streams and on a
// three-server cluster with R3 streams, both started once, and times each
// side's batches: a slow minute of this VM then slows both sides alike.
// Separate runs of BenchmarkReplicas swing between this VM's fast and
// slow minutes (R1 at 16 in flight 5,300 – 7,800 steps/s in one session)
// and their ratio with them.
func BenchmarkReplicaRatio(b *testing.B) {
	r1 := startOn(b, bustest.New(b))
	r3 := startOn(b, replicatedEnv(b))
	p := chainPlan(10)
	for _, parallel := range []int{16, 64} {
		b.Run(fmt.Sprintf("parallel-%d", parallel), func(b *testing.B) {
			var t1, t3 time.Duration
			n := 0
			for b.Loop() {
				start := time.Now()
				runBatch(b, r1, p, fmt.Sprintf("ratio-%d-%d", parallel, n), parallel)
				mid := time.Now()
				runBatch(b, r3, p, fmt.Sprintf("ratio-%d-%d", parallel, n), parallel)
				t1, t3 = t1+mid.Sub(start), t3+time.Since(mid)
				n++
			}
			steps := float64(10 * parallel * n)
			b.ReportMetric(steps/t1.Seconds(), "R1-steps/s")
			b.ReportMetric(steps/t3.Seconds(), "R3-steps/s")
			b.ReportMetric(t1.Seconds()/t3.Seconds(), "R3/R1")
		})
	}
}

// replicatedEnv is a three-server cluster with agentbus's streams at R3.
func replicatedEnv(t testing.TB) *bustest.Env {
	c := bustest.NewCluster(t, 3)
	b := c.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := b.Provision(ctx, bus.StreamsConfig{Replicas: 3}); err != nil {
		t.Fatalf("provision R3: %v", err)
	}
	return &bustest.Env{Bus: b, URL: c.URLs()}
}
