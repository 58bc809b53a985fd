package discovery_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/subjects"
)

const deadline = 30 * time.Second

func newRegistry(t *testing.T) (*bustest.Env, *discovery.Registry) {
	t.Helper()
	env := bustest.New(t)
	reg, err := discovery.New(t.Context(), env.Bus, nil)
	if err != nil {
		t.Fatal(err)
	}
	return env, reg
}

// registration is a live instance of agent name whose registered text is
// text, embedded with the local embedder as a worker would.
func registration(t *testing.T, instance, name, text string, capabilities ...string) discovery.Registration {
	t.Helper()
	vs, err := llm.LocalEmbedder{}.Embed(t.Context(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	return discovery.Registration{
		Instance: instance, Worker: "w-" + instance, Name: name, Version: "1.0.0", Description: text,
		Capabilities: capabilities, PID: os.Getpid(), StartedAt: time.Now().UTC(), HeartbeatAt: time.Now().UTC(),
		HeartbeatMS: time.Minute.Milliseconds(), SelfHealthy: true,
		Embedder: llm.LocalEmbedder{}.Name(), EmbeddingText: text, Embedding: vs[0],
	}
}

func put(t *testing.T, reg *discovery.Registry, r discovery.Registration, ttl time.Duration) {
	t.Helper()
	if err := reg.Put(t.Context(), r, ttl); err != nil {
		t.Fatalf("put %s: %v", r.Instance, err)
	}
}

func list(t *testing.T, reg *discovery.Registry) []discovery.Instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	out, err := reg.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRegistrationWithoutHeartbeatExpires(t *testing.T) {
	_, reg := newRegistry(t)
	put(t, reg, registration(t, "short-1", "short", "lives one second", "short"), time.Second)
	put(t, reg, registration(t, "long-1", "long", "lives a minute", "long"), time.Minute)
	if got := list(t, reg); len(got) != 2 {
		t.Fatalf("listed %d instances right after Put, want 2: %+v", len(got), got)
	}
	end := time.Now().Add(10 * time.Second)
	for {
		got := list(t, reg)
		if len(got) == 1 && got[0].Instance == "long-1" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("a registration with a 1s TTL, never refreshed, is still listed after 10s: %+v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestListSortsDecoratesAndSkipsForeignRecords(t *testing.T) {
	env, reg := newRegistry(t)
	stale := registration(t, "b-2", "beta", "beta agent", "beta")
	stale.HeartbeatAt = time.Now().Add(-time.Hour)
	sick := registration(t, "a-1", "alpha", "alpha agent", "alpha")
	sick.SelfHealthy, sick.HealthError = false, "health check: index not loaded"
	for _, r := range []discovery.Registration{registration(t, "b-1", "beta", "beta agent", "beta"), stale, sick} {
		put(t, reg, r, time.Minute)
	}
	// A record that is not a registration never breaks a listing.
	kv, err := env.Bus.KV(t.Context(), subjects.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(t.Context(), "garbage", []byte("not json")); err != nil {
		t.Fatal(err)
	}

	got := list(t, reg)
	want := []struct {
		instance string
		health   discovery.Health
	}{{"a-1", discovery.Unhealthy}, {"b-1", discovery.Healthy}, {"b-2", discovery.Unreachable}}
	if len(got) != len(want) {
		t.Fatalf("listed %d instances, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Instance != w.instance || got[i].Health != w.health {
			t.Errorf("instance %d: %s %s, want %s %s", i, got[i].Instance, got[i].Health, w.instance, w.health)
		}
		if got[i].Embedding != nil {
			t.Errorf("%s: List returned the embedding", got[i].Instance)
		}
	}
	if got[0].HealthError != "health check: index not loaded" {
		t.Errorf("health error %q lost", got[0].HealthError)
	}

	for _, c := range []struct {
		capability string
		want       bool
	}{{"alpha", true}, {"beta", true}, {"gamma", false}} {
		ok, err := reg.Serves(t.Context(), c.capability)
		if err != nil || ok != c.want {
			t.Errorf("Serves(%q) = %v, %v; want %v", c.capability, ok, err, c.want)
		}
	}

	if err := reg.Remove(t.Context(), "b-1"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Remove(t.Context(), "never-registered"); err != nil {
		t.Errorf("removing an unknown instance: %v, want nil", err)
	}
	if got := list(t, reg); len(got) != 2 || got[0].Instance != "a-1" || got[1].Instance != "b-2" {
		t.Errorf("after Remove(b-1): %+v", got)
	}
}

func TestDiscover(t *testing.T) {
	_, reg := newRegistry(t)
	const query = "translate hello into french"
	for _, r := range []discovery.Registration{
		registration(t, "tr-1", "translator", "Translates text between languages. translate this to French", "translate"),
		registration(t, "tr-2", "translator", "Translates text between languages. translate this to French", "translate"),
		registration(t, "echo-1", "echo", "Returns its input and the outputs of the steps it depends on", "echo"),
		registration(t, "sleep-1", "sleep", "Waits for the given number of milliseconds", "sleep"),
		registration(t, "math-1", "math", "Adds, subtracts and multiplies numbers", "math"),
	} {
		put(t, reg, r, time.Minute)
	}
	// The best text of all, but unreachable: never discovered.
	ghost := registration(t, "ghost-1", "ghost", query, "ghost")
	ghost.HeartbeatAt = time.Now().Add(-time.Hour)
	put(t, reg, ghost, time.Minute)
	// A sick instance of translator still counts as live, not as healthy.
	sick := registration(t, "tr-3", "translator", "Translates text between languages. translate this to French", "translate")
	sick.SelfHealthy = false
	put(t, reg, sick, time.Minute)
	// Registered with another embedder: its stored vector (here a decoy of
	// another dimension) is ignored and its text embedded again.
	other := registration(t, "fr-1", "french-tutor", "Teaches French vocabulary: hello, goodbye", "tutor")
	other.Embedder, other.Embedding = "remote-1536", make([]float32, 1536)
	put(t, reg, other, time.Minute)

	cases := []struct {
		k, wantLen int
	}{{2, 2}, {1, 1}, {0, 5}, {-3, 5}, {100, 5}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("k=%d", c.k), func(t *testing.T) {
			got, err := reg.Discover(t.Context(), query, c.k)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != c.wantLen {
				t.Fatalf("got %d matches, want %d: %+v", len(got), c.wantLen, got)
			}
			top := got[0]
			if top.Name != "translator" || top.Instances != 3 || top.Healthy != 2 || top.Capabilities[0] != "translate" {
				t.Errorf("top match %+v, want translator with 3 live instances, 2 healthy", top)
			}
			for i, m := range got {
				if m.Name == "ghost" {
					t.Errorf("the unreachable instance was discovered: %+v", got)
				}
				if i > 0 && m.Score > got[i-1].Score {
					t.Errorf("scores not in descending order: %+v", got)
				}
			}
		})
	}
	got, err := reg.Discover(t.Context(), query, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got[1].Name != "french-tutor" || got[1].Score <= 0 {
		t.Errorf("second match %+v, want french-tutor re-embedded with the registry's embedder (positive score)", got[1])
	}
}
