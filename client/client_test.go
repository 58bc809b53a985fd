package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

func echoPlan(ids ...string) *events.Plan {
	p := &events.Plan{}
	for i, id := range ids {
		st := events.PlanStep{ID: id, Capability: "echo", Input: json.RawMessage(`{"n":` + string(rune('0'+i)) + `}`)}
		if i > 0 {
			st.DependsOn = []string{ids[i-1]}
		}
		p.Steps = append(p.Steps, st)
	}
	return p
}

func sleepPlan(ms ...int) *events.Plan {
	p := &events.Plan{}
	for i, d := range ms {
		in, _ := json.Marshal(map[string]int{"ms": d})
		st := events.PlanStep{ID: "s" + string(rune('0'+i)), Capability: "sleep", Input: in}
		if i > 0 {
			st.DependsOn = []string{p.Steps[i-1].ID}
		}
		p.Steps = append(p.Steps, st)
	}
	return p
}

func TestSubmitAndWait(t *testing.T) {
	s := startStack(t)
	c := s.client(t)
	ctx := timeout(t)
	sub, err := c.Submit(ctx, client.Submission{WorkflowID: "two", Plan: echoPlan("a", "b")})
	if err != nil || sub.WorkflowID != "two" || sub.TenantID != "default" {
		t.Fatalf("submit: %+v, %v", sub, err)
	}
	res, err := c.Wait(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	var b echo.Output
	if err := json.Unmarshal(res.Result, &b); err != nil || b.StepID != "b" || len(res.Outputs) != 2 {
		t.Fatalf("result %s outputs %d (%v)", res.Result, len(res.Outputs), err)
	}
	st, err := c.State(ctx, "two")
	if err != nil || st.Status != events.StateCompleted || len(st.Plan.Steps) != 2 {
		t.Fatalf("state %s with %d steps, %v", st.Status, len(st.Plan.Steps), err)
	}
	revs, err := c.Checkpoints(ctx, "two")
	if err != nil || len(revs) < 2 || revs[len(revs)-1].Status != "completed" {
		t.Fatalf("checkpoints %d, %v", len(revs), err)
	}
	// a fork from the first revision runs the plan again from there
	fork, err := c.Fork(ctx, "two", revs[0].Revision, "two-again")
	if err != nil || fork.WorkflowID != "two-again" {
		t.Fatalf("fork %+v, %v", fork, err)
	}
	if _, err := c.Wait(ctx, "two-again"); err != nil {
		t.Fatal(err)
	}
	agents, err := c.Agents(ctx)
	if err != nil || len(agents) < 2 {
		t.Fatalf("agents %d, %v", len(agents), err)
	}
	d, err := c.Discover(ctx, "wait a little", 1)
	if err != nil || len(d.Matches) != 1 || d.Embedder == "" {
		t.Fatalf("discover %+v, %v", d, err)
	}
}

// A refused submission is an *APIError naming each problem by pointer;
// an unknown workflow is ErrNotFound.
func TestErrors(t *testing.T) {
	s := startStack(t)
	c := s.client(t)
	ctx := timeout(t)
	_, err := c.Submit(ctx, client.Submission{Plan: &events.Plan{Steps: []events.PlanStep{{ID: "bad id", Capability: "echo"}}}})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || len(ae.Problems) == 0 ||
		ae.Problems[0].Pointer != "/plan/steps/0/id" || !strings.Contains(err.Error(), "/plan/steps/0/id: ") {
		t.Fatalf("bad plan: %v (%+v)", err, ae)
	}
	if _, err := c.State(ctx, "nope"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("unknown workflow: %v", err)
	}
	quick, err := client.New(client.Config{URL: c.URL(), NotFoundGrace: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range quick.Follow(ctx, "nope", 0) {
		if !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("following an unknown workflow: %v", err)
		}
	}
	if _, err := client.New(client.Config{URL: "localhost:8080"}); !errors.Is(err, client.ErrConfig) {
		t.Fatalf("config without a scheme: %v", err)
	}
}

// Follow yields every event once, in order, across a gateway restart in
// the middle of the workflow.
func TestFollowAcrossAGatewayRestart(t *testing.T) {
	s := startStack(t)
	c := s.client(t)
	ctx := timeout(t)
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "long", Plan: sleepPlan(200, 200, 200, 200, 200)}); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	restarted := false
	for f, err := range c.Follow(ctx, "long", 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f.Offset)
		if !restarted && f.StepID == "s1" {
			restarted = true
			s.StopGateway()
			s.StartGateway()
		}
	}
	if !restarted {
		t.Fatal("the gateway was never restarted")
	}
	// what JetStream holds for the workflow, read straight from it
	var want []uint64
	err := s.Env.Bus.Follow(ctx, "default", "long", 0, func(_ context.Context, r busRecord) error {
		want = append(want, r.Offset)
		if r.Envelope.Type.Terminal() {
			return errStop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("followed %d events %v, stored %d %v", len(got), got, len(want), want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("event %d: offset %d, stored %d", i, got[i], want[i])
		}
	}
}

func TestCancelApproveResume(t *testing.T) {
	s := startStack(t)
	c := s.client(t)
	ctx := timeout(t)
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "nap", Plan: sleepPlan(30000)}); err != nil {
		t.Fatal(err)
	}
	// cancel once the step runs
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
	if _, err := c.Wait(ctx, "nap"); !errors.As(err, &we) || we.Code != "canceled" || we.Message != "enough" {
		t.Fatalf("wait on a canceled workflow: %v", err)
	}
	if _, err := c.Cancel(ctx, "nap", "again"); err == nil {
		t.Fatal("canceling an ended workflow applied")
	}

	p := echoPlan("a")
	p.Steps[0].RequiresApproval = true
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "review", Plan: p}); err != nil {
		t.Fatal(err)
	}
	for f, err := range c.Follow(ctx, "review", 0) {
		if err != nil {
			t.Fatal(err)
		}
		var st events.Status
		if f.Type == "status" && json.Unmarshal(f.Data, &st) == nil && st.State == events.StateInputRequired {
			break
		}
	}
	if r, err := c.Approve(ctx, "review", "a", "looks right"); err != nil || !r.Applied {
		t.Fatalf("approve %+v, %v", r, err)
	}
	if _, err := c.Wait(ctx, "review"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resume(ctx, "review"); err == nil {
		t.Fatal("resuming a completed workflow applied")
	}
}

// A follower whose cursor the gateway can no longer replay (the events
// were purged) gets the reset frame with a *ResetError carrying the state,
// and, ranging on, the rest of the workflow.
func TestFollowReportsAReset(t *testing.T) {
	s := startStack(t)
	c := s.client(t)
	ctx := timeout(t)
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "gone", Plan: sleepPlan(200, 1500)}); err != nil {
		t.Fatal(err)
	}
	var cursor uint64
	for f, err := range c.Follow(ctx, "gone", 0) {
		if err != nil {
			t.Fatal(err)
		}
		cursor = f.Offset
		if f.StepID == "s1" {
			break
		}
	}
	nc, err := nats.Connect(s.Env.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	st, err := js.Stream(ctx, subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	// purge once an event after the cursor is stored, so that one is lost
	for {
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.LastSeq > cursor {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no event after the cursor")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := st.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	var resets int
	var last client.Frame
	for f, err := range c.Follow(ctx, "gone", cursor) {
		var re *client.ResetError
		switch {
		case errors.As(err, &re):
			resets++
			if !errors.Is(err, client.ErrReset) || re.Reason != "retention" || re.State.WorkflowID != "gone" {
				t.Fatalf("reset %+v", re)
			}
		case err != nil:
			t.Fatal(err)
		}
		last = f
	}
	if resets != 1 || last.Type != events.TypeComplete.Short() {
		t.Fatalf("%d resets, ended with %q", resets, last.Type)
	}
}
