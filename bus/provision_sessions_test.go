package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

// The sessions bucket keeps one revision per session for --session-ttl;
// an existing one with another TTL is reported, never changed.
func TestProvisionSessionsBucket(t *testing.T) {
	env := bustest.NewWithOptions(t, bustest.Options{Streams: bus.StreamsConfig{SessionTTL: time.Hour}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := env.Bus.JetStream().KeyValue(ctx, subjects.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.TTL() != time.Hour || st.History() != 1 {
		t.Fatalf("sessions bucket: ttl %v history %d (%v)", st.TTL(), st.History(), err)
	}
	if err := env.Bus.Provision(ctx, bus.StreamsConfig{SessionTTL: time.Hour}); err != nil {
		t.Fatalf("provision again: %v", err)
	}
	err = env.Bus.Provision(ctx, bus.StreamsConfig{SessionTTL: 2 * time.Hour})
	if !errors.Is(err, bus.ErrIncompatible) || !strings.Contains(err.Error(), "AGENTBUS_SESSIONS") || !strings.Contains(err.Error(), "TTL is 1h0m0s, want 2h0m0s") {
		t.Fatalf("another TTL: %v", err)
	}
	if err := env.Bus.Provision(ctx, bus.StreamsConfig{SessionTTL: time.Second}); err == nil || !strings.Contains(err.Error(), "session TTL 1s is below 1m") {
		t.Fatalf("a session TTL of 1s: %v", err)
	}
}
