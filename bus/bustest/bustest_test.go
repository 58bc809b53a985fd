package bustest_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

func TestNewGivesIndependentServers(t *testing.T) {
	t.Parallel()
	a, b := bustest.New(t), bustest.New(t)
	if a.URL == b.URL {
		t.Fatalf("both servers listen on %s", a.URL)
	}
	if a.Dir == b.Dir || a.Server.DataDir() == b.Server.DataDir() {
		t.Fatalf("both servers store under %s", a.Dir)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subj, err := subjects.Events("acme", "w1")
	if err != nil {
		t.Fatal(err)
	}
	env, err := events.New(events.TypeStatus, events.EventKey("acme", "w1", 1), events.SourceOrchestrator,
		"acme", "w1", "", events.Status{State: events.StateWorking})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Bus.Publish(ctx, subj, env, env.ID); err != nil {
		t.Fatalf("publish on the first server: %v", err)
	}
	if off, err := a.Bus.LastOffset(ctx, "acme", "w1"); err != nil || off != 1 {
		t.Errorf("first server LastOffset = %d, %v; want 1", off, err)
	}
	if off, err := b.Bus.LastOffset(ctx, "acme", "w1"); err != nil || off != 0 {
		t.Errorf("second server LastOffset = %d, %v; want 0 (nothing published there)", off, err)
	}
	ea, err := a.Bus.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eb, err := b.Bus.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ea == eb {
		t.Errorf("both servers have epoch %q, want one each", ea)
	}
}

func TestConnectSharesTheServer(t *testing.T) {
	t.Parallel()
	env := bustest.New(t)
	other := bustest.Connect(t, env)
	if other == env.Bus || other.Conn().ConnectedUrl() != env.Bus.Conn().ConnectedUrl() {
		t.Fatalf("Connect gave %v, want a second connection to %s", other.Conn().ConnectedUrl(), env.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e1, err := env.Bus.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := other.Epoch(ctx)
	if err != nil || e1 != e2 {
		t.Fatalf("epochs %q and %q (%v), want the same stream", e1, e2, err)
	}
}

func TestNoProvision(t *testing.T) {
	t.Parallel()
	env := bustest.NewWithOptions(t, bustest.Options{NoProvision: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := env.Bus.Epoch(ctx); err == nil {
		t.Fatal("Epoch on an unprovisioned server succeeded, want an error")
	}
}

func TestLoggerDiscardsWithoutVerbose(t *testing.T) {
	t.Parallel()
	log := bustest.Logger(t)
	log.Info("written to the test log only with -v")
	if log == nil {
		t.Fatal("Logger returned nil")
	}
}
