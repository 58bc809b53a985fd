package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/discovery"
)

func openRegistry(t testing.TB, b *bus.Bus) *discovery.Registry {
	t.Helper()
	reg, err := discovery.New(t.Context(), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// instances lists the registry, failing the test on error.
func instances(t testing.TB, reg *discovery.Registry) []discovery.Instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	list, err := reg.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// instanceOf returns the instance of agent name, if registered.
func instanceOf(t testing.TB, reg *discovery.Registry, name string) (discovery.Instance, bool) {
	t.Helper()
	for _, in := range instances(t, reg) {
		if in.Name == name {
			return in, true
		}
	}
	return discovery.Instance{}, false
}

func summary(in discovery.Instance, ok bool) string {
	if !ok {
		return "not registered"
	}
	return fmt.Sprintf("health %s (%q), processed %d, errors %d", in.Health, in.HealthError, in.Processed, in.Errors)
}

func TestWorkerRegistersEveryAgentUntilRunReturns(t *testing.T) {
	env := bustest.New(t)
	reg := openRegistry(t, env.Bus)
	rw := startWorker(t, agents.WorkerConfig{Bus: env.Bus, Name: "reg-worker", Agents: []agents.Agent{echo.Agent{}, sleep.Agent{}}})

	// Start alone has registered both agents.
	list := instances(t, reg)
	if len(list) != 2 {
		t.Fatalf("registry lists %d instances after Start, want 2: %+v", len(list), list)
	}
	for i, a := range []agents.Agent{echo.Agent{}, sleep.Agent{}} {
		card, in := a.Card(), list[i]
		if in.Name != card.Name || !slices.Equal(in.Capabilities, card.Capabilities) || in.Version != card.Version {
			t.Errorf("instance %d is %s %v %s, want %s %v %s", i, in.Name, in.Capabilities, in.Version, card.Name, card.Capabilities, card.Version)
		}
		if in.Description != card.Description || !slices.Equal(in.Examples, card.Examples) {
			t.Errorf("%s: description/examples %q %v, want the card's", in.Name, in.Description, in.Examples)
		}
		if in.PID != os.Getpid() || in.Worker != "reg-worker" || in.Instance == "" || in.ServiceID == "" {
			t.Errorf("%s: pid %d worker %q instance %q service %q", in.Name, in.PID, in.Worker, in.Instance, in.ServiceID)
		}
		if in.Health != discovery.Healthy || in.HealthError != "" {
			t.Errorf("%s: health %s (%q), want healthy", in.Name, in.Health, in.HealthError)
		}
		if in.Slots != agents.DefaultConcurrency {
			t.Errorf("%s: %d slots, want the worker's concurrency, %d", in.Name, in.Slots, agents.DefaultConcurrency)
		}
		if in.Embedder != "local-hash-256" || !strings.Contains(in.EmbeddingText, card.Description) {
			t.Errorf("%s: embedder %q, embedding text %q", in.Name, in.Embedder, in.EmbeddingText)
		}
		if in.StartedAt.IsZero() || in.HeartbeatAt.Before(in.StartedAt) || in.HeartbeatMS != discovery.DefaultHeartbeat.Milliseconds() {
			t.Errorf("%s: started %s, heartbeat %s every %dms", in.Name, in.StartedAt, in.HeartbeatAt, in.HeartbeatMS)
		}
	}
	if list[0].Instance == list[1].Instance {
		t.Errorf("both agents share instance id %q", list[0].Instance)
	}

	// Run's error is left to TestRunStoppedRightAfterStartReturnsNil: a
	// stop this soon after Start may race the consumers' setup.
	_ = rw.stop(t)
	if list := instances(t, reg); len(list) != 0 {
		t.Fatalf("after Run returned the registry still lists %+v", list)
	}
}

// registryHeartbeat is short so that health changes show quickly; the
// registration TTL (3·heartbeat) is then below NATS's 1s minimum and relies
// on bus.KV.PutTTL rounding it up.
const registryHeartbeat = 200 * time.Millisecond

func TestFailingHealthCheckMakesInstanceUnhealthy(t *testing.T) {
	env := bustest.New(t)
	reg := openRegistry(t, env.Bus)
	var broken atomic.Bool
	a := checkedAgent{
		funcAgent: newAgent("model", func(context.Context, agents.Request, agents.Emitter) (json.RawMessage, error) {
			return okOutput, nil
		}),
		health: func(context.Context) error {
			if broken.Load() {
				return errors.New("model endpoint refused connection")
			}
			return nil
		},
	}
	startWorker(t, agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{a}, Heartbeat: registryHeartbeat})

	steps := []struct {
		broken    bool
		want      discovery.Health
		wantError string
	}{
		{false, discovery.Healthy, ""},
		{true, discovery.Unhealthy, "model endpoint refused connection"},
		{false, discovery.Healthy, ""},
	}
	for _, s := range steps {
		broken.Store(s.broken)
		waitFor(t, deadline, fmt.Sprintf("model to be %s", s.want), func() (bool, string) {
			in, ok := instanceOf(t, reg, "model")
			return ok && in.Health == s.want && strings.Contains(in.HealthError, s.wantError) &&
				(s.wantError != "" || in.HealthError == ""), summary(in, ok)
		})
	}
}

func TestFiveConsecutiveFailuresMakeInstanceUnhealthy(t *testing.T) {
	env := bustest.New(t)
	startOrchestrator(t, env.Bus)
	reg := openRegistry(t, env.Bus)
	flaky := newAgent("flaky", func(_ context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
		if string(req.Input) == `"succeed"` {
			return okOutput, nil
		}
		return nil, fmt.Errorf("disk full on %s: %w", req.StepID, agents.ErrPermanent)
	})
	startWorker(t, agents.WorkerConfig{Bus: env.Bus, Agents: []agents.Agent{flaky}, Heartbeat: registryHeartbeat})

	waitProcessed := func(n uint64) discovery.Instance {
		t.Helper()
		var got discovery.Instance
		waitFor(t, deadline, fmt.Sprintf("a heartbeat after %d steps", n), func() (bool, string) {
			in, ok := instanceOf(t, reg, "flaky")
			got = in
			return ok && in.Processed == n, summary(in, ok)
		})
		return got
	}
	for i := 1; i <= 5; i++ {
		failed(t, runWorkflow(t, env.Bus, "default", fmt.Sprintf("fail-%d", i), plan(step("F", "flaky", "fail"))))
		in := waitProcessed(uint64(i))
		if in.Errors != uint64(i) {
			t.Fatalf("after %d failures the registry counts %d errors", i, in.Errors)
		}
		if i < 5 && in.Health != discovery.Healthy {
			t.Fatalf("after %d consecutive failures: %s, want still healthy", i, summary(in, true))
		}
		if i == 5 && (in.Health != discovery.Unhealthy || !strings.Contains(in.HealthError, "consecutive") || !strings.Contains(in.HealthError, "disk full")) {
			t.Fatalf("after 5 consecutive failures: %s, want unhealthy naming the failures and the last error", summary(in, true))
		}
	}
	completed(t, runWorkflow(t, env.Bus, "default", "recover", plan(step("S", "flaky", "succeed"))))
	if in := waitProcessed(6); in.Health != discovery.Healthy || in.HealthError != "" {
		t.Fatalf("after a success: %s, want healthy again", summary(in, true))
	}
}

// TestKilledWorkerDisappearsWithinTTL kills a worker (its connection
// closes under it, so it can neither heartbeat nor unregister): its
// registration must expire on its own, within its TTL of 3·Heartbeat.
func TestKilledWorkerDisappearsWithinTTL(t *testing.T) {
	for _, hb := range []time.Duration{time.Second, registryHeartbeat, 100 * time.Millisecond} {
		// 3·hb below 1s is rounded up by bus.KV.PutTTL; NATS would refuse it.
		t.Run(hb.String(), func(t *testing.T) {
			env := bustest.New(t)
			reg := openRegistry(t, env.Bus)
			conn := bustest.Connect(t, env)
			startWorker(t, agents.WorkerConfig{Bus: conn, Agents: []agents.Agent{echo.Agent{}}, Heartbeat: hb})
			if _, ok := instanceOf(t, reg, "echo"); !ok {
				t.Fatalf("echo is not registered after Start (heartbeat %s, ttl %s: see bus.KV.PutTTL)", hb, 3*hb)
			}
			conn.Close() // the worker is dead to the world from here on
			waitFor(t, 15*time.Second, "the dead worker's registration to expire", func() (bool, string) {
				in, ok := instanceOf(t, reg, "echo")
				return !ok, summary(in, ok)
			})
		})
	}
}
