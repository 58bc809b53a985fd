package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/llm"
)

// discovered returns the names Discover finds for query, in order.
func discovered(t *testing.T, reg *discovery.Registry, query string, k int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	ms, err := reg.Discover(ctx, query, k)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// eventually waits, up to the deadline, for cond; what describes the last
// state seen for the failure message.
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(deadline)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s; last seen %s", what, deadline, state)
		}
		<-tick.C
	}
}

// waitNames waits until Discover(query, 10) returns exactly want, in any
// order.
func waitNames(t *testing.T, reg *discovery.Registry, what string, want ...string) {
	t.Helper()
	slices.Sort(want)
	eventually(t, what, func() (bool, string) {
		got := discovered(t, reg, "agent", 10)
		slices.Sort(got)
		return slices.Equal(got, want), fmt.Sprint(got)
	})
}

func TestIndexFollowsRegistrationRemovalAndExpiry(t *testing.T) {
	env, reg := newRegistry(t)
	writer, err := discovery.New(t.Context(), bustest.Connect(t, env), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := discovered(t, reg, "agent", 5); len(got) != 0 {
		t.Fatalf("an empty registry discovered %v", got)
	}
	put(t, writer, registration(t, "a-1", "alpha", "alpha agent", "alpha"), time.Minute)
	put(t, writer, registration(t, "b-1", "beta", "beta agent", "beta"), time.Minute)
	waitNames(t, reg, "two registrations", "alpha", "beta")

	// A second instance and a changed card: the newest instance's card.
	second := registration(t, "a-2", "alpha", "alpha agent translates", "alpha", "translate")
	second.StartedAt = time.Now().Add(time.Second)
	put(t, writer, second, time.Minute)
	eventually(t, "alpha's second instance and card", func() (bool, string) {
		ms, err := reg.Catalog(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return len(ms) == 2 && ms[0].Instances == 2 && slices.Equal(ms[0].Capabilities, []string{"alpha", "translate"}), fmt.Sprintf("%+v", ms)
	})
	if ok, err := reg.Serves(t.Context(), "translate"); !ok || err != nil {
		t.Fatalf("Serves(translate) = %v, %v", ok, err)
	}

	if err := writer.Remove(t.Context(), "b-1"); err != nil {
		t.Fatal(err)
	}
	waitNames(t, reg, "beta removed", "alpha")

	// Registered with a one-second TTL and never refreshed: it drops out
	// when the key expires.
	put(t, writer, registration(t, "g-1", "gamma", "gamma agent", "gamma"), time.Second)
	waitNames(t, reg, "gamma registered", "alpha", "gamma")
	waitNames(t, reg, "gamma expired", "alpha")

	// Heartbeats stop (the key stays): the instance is unreachable after
	// two intervals, so the agent is no longer discovered.
	silent := registration(t, "d-1", "delta", "delta agent", "delta")
	silent.HeartbeatMS, silent.HeartbeatAt = 1000, time.Now().Add(-3*time.Second)
	put(t, writer, silent, time.Minute)
	// The watch delivers in order: once epsilon is in, so is delta.
	put(t, writer, registration(t, "e-1", "epsilon", "epsilon agent", "epsilon"), time.Minute)
	waitNames(t, reg, "delta left out, epsilon in", "alpha", "epsilon")
}

func TestIndexSurvivesRegistryRestart(t *testing.T) {
	env, reg := newRegistry(t)
	for _, n := range []string{"alpha", "beta", "gamma"} {
		put(t, reg, registration(t, n+"-1", n, n+" agent", n), time.Minute)
	}
	waitNames(t, reg, "three registrations", "alpha", "beta", "gamma")
	reg.Close()
	reg.Close() // twice is fine
	if _, err := reg.Discover(t.Context(), "agent", 5); !errors.Is(err, discovery.ErrClosed) {
		t.Fatalf("Discover after Close = %v, want ErrClosed", err)
	}
	if err := reg.Remove(t.Context(), "beta-1"); err != nil { // writes still work
		t.Fatal(err)
	}
	again, err := discovery.New(t.Context(), env.Bus, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(again.Close)
	// A new registry's first query waits for the whole bucket.
	got := discovered(t, again, "agent", 10)
	slices.Sort(got)
	if !slices.Equal(got, []string{"alpha", "gamma"}) {
		t.Fatalf("a new registry discovered %v, want alpha and gamma", got)
	}
}

// TestIndexSurvivesServerRestart: the server stops and starts again on the
// same store and address; the index keeps answering meanwhile (from what
// it holds) and follows the registrations made after the restart.
func TestIndexSurvivesServerRestart(t *testing.T) {
	dir, addr := t.TempDir(), bustest.FreeAddr(t)
	start := func() *broker.Server {
		srv, err := broker.Start(broker.Config{DataDir: dir, Addr: addr, Name: "restart"})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	stop := func(srv *broker.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
	srv := start()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	b, err := bus.Connect(ctx, bus.Config{URL: "nats://" + addr, Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Provision(ctx, bus.StreamsConfig{}); err != nil {
		t.Fatal(err)
	}
	reg, err := discovery.Open(ctx, discovery.Config{Bus: b, Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	put(t, reg, registration(t, "a-1", "alpha", "alpha agent", "alpha"), time.Minute)
	waitNames(t, reg, "before the restart", "alpha")

	stop(srv)
	if got := discovered(t, reg, "agent", 10); !slices.Equal(got, []string{"alpha"}) {
		t.Fatalf("while the server is down the index answered %v, want what it held", got)
	}
	srv = start()
	defer stop(srv)
	eventually(t, "a registration after the restart", func() (bool, string) {
		// Put until the connection is back; the index then follows it.
		err := reg.Put(t.Context(), registration(t, "b-1", "beta", "beta agent", "beta"), time.Minute)
		got := discovered(t, reg, "agent", 10)
		slices.Sort(got)
		return err == nil && slices.Equal(got, []string{"alpha", "beta"}), fmt.Sprint(got, err)
	})
	if err := reg.Remove(t.Context(), "a-1"); err != nil {
		t.Fatal(err)
	}
	waitNames(t, reg, "a removal after the restart", "beta")
}

// countingEmbedder is the local embedder under another name, counting the
// texts it embeds.
type countingEmbedder struct {
	llm.LocalEmbedder
	texts atomic.Int64
}

func (e *countingEmbedder) Name() string { return "counting-256" }

func (e *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.texts.Add(int64(len(texts)))
	return e.LocalEmbedder.Embed(ctx, texts)
}

// TestCardsOfAnotherEmbedderAreEmbeddedOnce: workers registered with the
// local embedder, the reader uses another; each card is embedded once, not
// per query or per heartbeat.
func TestCardsOfAnotherEmbedderAreEmbeddedOnce(t *testing.T) {
	env := bustest.New(t)
	emb := &countingEmbedder{}
	reg, err := discovery.Open(t.Context(), discovery.Config{Bus: env.Bus, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	writer, err := discovery.New(t.Context(), env.Bus, nil)
	if err != nil {
		t.Fatal(err)
	}
	cards := []string{"translates text into french", "adds numbers", "searches documents"}
	for i, c := range cards {
		put(t, writer, registration(t, fmt.Sprintf("i-%d", i), strings.Fields(c)[0], c, "c"), time.Minute)
	}
	if got := discovered(t, reg, "translate hello into french", 1); !slices.Equal(got, []string{"translates"}) {
		t.Fatalf("discovered %v", got)
	}
	after := emb.texts.Load() // three cards and one query
	if after != 4 {
		t.Fatalf("embedded %d texts for the first query, want 4 (3 cards, 1 query)", after)
	}
	// Heartbeats of the same cards, then more queries: queries only.
	for i, c := range cards {
		put(t, writer, registration(t, fmt.Sprintf("i-%d", i), strings.Fields(c)[0], c, "c"), time.Minute)
	}
	for range 5 {
		discovered(t, reg, "add two numbers", 2)
	}
	if n := emb.texts.Load() - after; n != 5 {
		t.Fatalf("embedded %d texts for 5 queries after heartbeats, want 5", n)
	}
	if reg.Embedder().Name() != "counting-256" {
		t.Fatalf("registry embedder %s", reg.Embedder().Name())
	}
}
