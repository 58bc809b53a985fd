package discovery_test

import (
	"testing"
	"time"

	"github.com/agentbus/agentbus/discovery"
)

func TestRegistrationHealth(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name        string
		heartbeatMS int64
		age         time.Duration
		selfHealthy bool
		want        discovery.Health
	}{
		{"fresh", 1000, 0, true, discovery.Healthy},
		{"one interval late", 1000, 1500 * time.Millisecond, true, discovery.Healthy},
		{"exactly two intervals", 1000, 2 * time.Second, true, discovery.Healthy},
		{"past two intervals", 1000, 2*time.Second + time.Millisecond, true, discovery.Unreachable},
		{"long gone", 1000, time.Hour, true, discovery.Unreachable},
		{"self unhealthy", 1000, 500 * time.Millisecond, false, discovery.Unhealthy},
		// Silence outranks the agent's own verdict: an unhealthy instance
		// that stops heartbeating is unreachable.
		{"self unhealthy and silent", 1000, 3 * time.Second, false, discovery.Unreachable},
		{"no interval means the default, fresh", 0, 2 * discovery.DefaultHeartbeat, true, discovery.Healthy},
		{"no interval means the default, silent", 0, 2*discovery.DefaultHeartbeat + time.Second, true, discovery.Unreachable},
		{"negative interval means the default", -5, discovery.DefaultHeartbeat, true, discovery.Healthy},
		// A clock a little ahead on the worker does not make it unreachable.
		{"heartbeat from the future", 1000, -time.Second, true, discovery.Healthy},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := discovery.Registration{HeartbeatMS: c.heartbeatMS, HeartbeatAt: now.Add(-c.age), SelfHealthy: c.selfHealthy}
			if got := r.Health(now); got != c.want {
				t.Fatalf("Health with heartbeat %dms, %s old, self healthy %v = %s, want %s", c.heartbeatMS, c.age, c.selfHealthy, got, c.want)
			}
		})
	}
}

func TestEmbeddingText(t *testing.T) {
	got := discovery.EmbeddingText("translator", []string{"translate", "detect-language"}, "Translates text.", []string{"to French", "to German"})
	want := "translator\ntranslate detect-language\nTranslates text.\nto French\nto German"
	if got != want {
		t.Fatalf("EmbeddingText = %q, want %q", got, want)
	}
	if got := discovery.EmbeddingText("bare", nil, "", nil); got != "bare\n\n" {
		t.Fatalf("EmbeddingText without capabilities or examples = %q", got)
	}
}
