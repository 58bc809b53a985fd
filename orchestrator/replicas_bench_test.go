package orchestrator_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
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
//
// The client waits for each workflow's end two ways, as `agentbus bench
// --follow` does: follow=workflow follows each workflow's log with a
// follower of its own (bus.Follow: a live subscription and a direct get,
// no consumer), as BenchmarkReplicas does; follow=tenant reads the tenant's events through one ordered consumer
// for the whole run and hands each terminal event to its waiter.
func BenchmarkReplicaRatio(b *testing.B) {
	r1 := startOn(b, bustest.New(b))
	r3 := startOn(b, replicatedEnv(b))
	p := chainPlan(10)
	for _, follow := range []string{"workflow", "tenant"} {
		for _, parallel := range []int{16, 64} {
			b.Run(fmt.Sprintf("follow=%s/parallel-%d", follow, parallel), func(b *testing.B) {
				batch := func(s *stack, prefix string) { runBatch(b, s, p, prefix, parallel) }
				if follow == "tenant" {
					w1, w3 := tenantWaiter(b, r1), tenantWaiter(b, r3)
					batch = func(s *stack, prefix string) {
						w := w1
						if s == r3 {
							w = w3
						}
						w.runBatch(b, s, p, prefix, parallel)
					}
				}
				var t1, t3 time.Duration
				tag := runTag()
				n := 0
				for b.Loop() {
					prefix := fmt.Sprintf("ratio-%s-%d-%s-%d", follow, parallel, tag, n)
					start := time.Now()
					batch(r1, prefix)
					mid := time.Now()
					batch(r3, prefix)
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
}

// waiter hands each workflow's terminal event, read from its tenant's
// events by one ordered consumer (bus.FollowTenant), to whoever waits for
// that workflow.
type waiter struct {
	mu      sync.Mutex
	waiting map[string]chan events.Type
}

// tenantWaiter follows tenant "default" on s from its newest event until
// the benchmark ends.
func tenantWaiter(b *testing.B, s *stack) *waiter {
	w := &waiter{waiting: map[string]chan events.Type{}}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	after, err := s.env.Bus.TenantLastOffset(ctx, "default")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		_ = s.env.Bus.FollowTenant(ctx, "default", after, func(_ context.Context, r bus.Record) error {
			if r.Envelope.Type.Terminal() {
				w.mu.Lock()
				ch := w.waiting[r.Envelope.WorkflowID]
				delete(w.waiting, r.Envelope.WorkflowID)
				w.mu.Unlock()
				if ch != nil {
					ch <- r.Envelope.Type
				}
			}
			return nil
		})
	}()
	return w
}

// runBatch is runBatch with the ends read from w.
func (w *waiter) runBatch(b *testing.B, s *stack, p *events.Plan, prefix string, parallel int) {
	var wg sync.WaitGroup
	for j := range parallel {
		wf := fmt.Sprintf("%s-%d", prefix, j)
		ch := make(chan events.Type, 1)
		w.mu.Lock()
		w.waiting[wf] = ch
		w.mu.Unlock()
		wg.Go(func() {
			submit(b, s.env.Bus, "default", wf, events.WorkflowSubmitted{Plan: p})
			select {
			case end := <-ch:
				if end != events.TypeComplete {
					b.Errorf("workflow %s ended %s", wf, end)
				}
			case <-time.After(20 * time.Second):
				b.Errorf("workflow %s: no end within 20s", wf)
			}
		})
	}
	wg.Wait()
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
