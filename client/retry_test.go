package client_test

import (
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/sleep"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/internal/stacktest"
	"github.com/agentbus/agentbus/subjects"
)

// A gateway whose submissions stream has no leader for longer than its
// store timeout answers 503 with Retry-After; Submit asks again with the
// same workflow id (one the SDK picked, since the submission names none)
// until the stream answers, and the workflow runs once.
func TestSubmitRetriesA503WithTheSameID(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{Agents: []agents.Agent{sleep.Agent{}}, Gateway: true,
		GatewayConfig: func(c *gateway.Config) { c.StoreTimeout = time.Second }})
	ctx := timeout(t)
	if err := s.Env.Bus.JetStream().DeleteStream(ctx, subjects.StreamWorkflows); err != nil {
		t.Fatal(err)
	}
	// Back after the gateway's first 503 (StoreTimeout 1s) and its
	// Retry-After (2s), so that Submit has to try again.
	back := make(chan error, 1)
	time.AfterFunc(1500*time.Millisecond, func() { back <- s.Env.Bus.Provision(ctx, bus.StreamsConfig{}) })
	c, err := client.New(client.Config{URL: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sub, err := c.Submit(ctx, client.Submission{Plan: &events.Plan{Steps: []events.PlanStep{{ID: "a", Capability: "echo"}}}})
	if err != nil {
		t.Fatalf("submit across the outage: %v", err)
	}
	if err := <-back; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("accepted after %s: the gateway's 503 was not met and retried", took)
	}
	if sub.WorkflowID == "" {
		t.Fatal("no workflow id")
	}
	if _, err := c.Wait(ctx, sub.WorkflowID); err != nil {
		t.Fatal(err)
	}
	st, err := c.State(ctx, sub.WorkflowID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != events.StateCompleted || st.Tasks["a"].Attempt != 1 {
		t.Fatalf("ended %s, step a attempt %d", st.Status, st.Tasks["a"].Attempt)
	}
}
