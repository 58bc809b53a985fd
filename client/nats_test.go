package client_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
)

// The same calls straight over NATS, no gateway: submit, follow, wait,
// state, checkpoints, fork, cancel, agents, discover, and the errors a
// gateway would answer.
func TestNATSClient(t *testing.T) {
	s := startStack(t)
	c, err := client.NewNATS(s.Env.Bus, client.NATSConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := timeout(t)
	sub, err := c.Submit(ctx, client.Submission{WorkflowID: "direct", Plan: echoPlan("a", "b")})
	if err != nil || sub.EventsSubject != "agentbus.default.events.direct" {
		t.Fatalf("submit %+v, %v", sub, err)
	}
	var types []string
	for f, err := range c.Follow(ctx, "direct", 0) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, f.Type)
	}
	if len(types) < 5 || types[len(types)-1] != "complete" {
		t.Fatalf("followed %v", types)
	}
	res, err := c.Wait(ctx, "direct")
	var b echo.Output
	if err != nil || json.Unmarshal(res.Result, &b) != nil || b.StepID != "b" {
		t.Fatalf("wait %s, %v", res.Result, err)
	}
	st, err := c.State(ctx, "direct")
	if err != nil || st.Status != events.StateCompleted || len(st.Outbox) != 0 {
		t.Fatalf("state %s, %v", st.Status, err)
	}
	revs, err := c.Checkpoints(ctx, "direct")
	if err != nil || len(revs) < 2 || revs[len(revs)-1].Status != "completed" {
		t.Fatalf("checkpoints %d, %v", len(revs), err)
	}
	if _, err := c.Fork(ctx, "direct", revs[0].Revision, "direct-fork"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx, "direct-fork"); err != nil {
		t.Fatal(err)
	}

	var ae *client.APIError
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "direct", Query: "again"}); !errors.As(err, &ae) || ae.StatusCode != http.StatusConflict {
		t.Fatalf("a taken id: %v", err)
	}
	_, err = c.Submit(ctx, client.Submission{Plan: &events.Plan{Steps: []events.PlanStep{{ID: "bad id", Capability: "echo"}}}})
	if !errors.As(err, &ae) || len(ae.Problems) == 0 || ae.Problems[0].Pointer != "/plan/steps/0/id" {
		t.Fatalf("a bad plan: %v", err)
	}
	if _, err := c.State(ctx, "nope"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("unknown workflow: %v", err)
	}

	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "nap", Plan: sleepPlan(30000)}); err != nil {
		t.Fatal(err)
	}
	for f, err := range c.Follow(ctx, "nap", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if f.StepID == "s0" {
			break
		}
	}
	if r, err := c.Cancel(ctx, "nap", "enough"); err != nil || !r.Applied {
		t.Fatalf("cancel %+v, %v", r, err)
	}
	var we *client.WorkflowError
	if _, err := c.Wait(ctx, "nap"); !errors.As(err, &we) || we.Code != "canceled" {
		t.Fatalf("wait on a canceled workflow: %v", err)
	}
	if _, err := c.Cancel(ctx, "nap", "again"); !errors.As(err, &ae) || ae.StatusCode != http.StatusConflict {
		t.Fatalf("canceling an ended workflow: %v", err)
	}

	agents, err := c.Agents(ctx)
	if err != nil || len(agents) < 2 {
		t.Fatalf("agents %d, %v", len(agents), err)
	}
	for range 2 { // the second asks the registry the first opened
		if d, err := c.Discover(ctx, "wait a little", 1); err != nil || len(d.Matches) != 1 {
			t.Fatalf("discover %+v, %v", d, err)
		}
	}
	if _, err := c.Do(ctx, http.MethodGet, "/v1/agents", nil); !errors.Is(err, client.ErrNoHTTP) {
		t.Fatalf("Do over NATS: %v", err)
	}
	if _, err := client.NewNATS(s.Env.Bus, client.NATSConfig{Tenant: "Not.A.Tenant"}); !errors.Is(err, client.ErrConfig) {
		t.Fatalf("a bad tenant: %v", err)
	}
}
