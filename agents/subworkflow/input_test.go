package subworkflow_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/subworkflow"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/client"
)

// TestBadInput: an input the agent cannot run fails the step at once
// (permanently), naming where in the input the problem is.
func TestBadInput(t *testing.T) {
	env := bustest.New(t)
	a, err := subworkflow.New(subworkflow.Config{Bus: env.Bus, Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, input, want string
	}{
		{"empty", `{}`, "/: give one of query"},
		{"both", `{"query":"a","plan":{"steps":[{"id":"e","capability":"echo"}]}}`, "/: give exactly one of query and plan"},
		{"empty query", `{"query":""}`, "/query"},
		{"blank query", `{"query":"  "}`, "/query: blank"},
		{"unknown field", `{"query":"a","qurey":"b"}`, "/qurey"},
		{"plan without steps", `{"plan":{}}`, "/plan"},
		{"bad step", `{"plan":{"steps":[{"id":"e","capability":"Not A Capability"}]}}`, "/plan/steps/0/capability"},
		{"unknown step field", `{"plan":{"steps":[{"id":"e","capability":"echo","dependson":["x"]}]}}`, "/plan/steps/0"},
		{"reserved metadata", `{"query":"a","metadata":{"parent_workflow":"x"}}`, "/metadata/parent_workflow"},
		{"metadata not text", `{"query":"a","metadata":{"n":1}}`, "/metadata/n"},
		{"bad timeout", `{"query":"a","timeout":"soon"}`, "/timeout"},
		{"zero timeout", `{"query":"a","timeout":"0s"}`, "/timeout"},
		{"long timeout", `{"query":"a","timeout":"169h"}`, "/timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := agents.Request{TenantID: "default", WorkflowID: "wf", StepID: "sub", Capability: subworkflow.Capability, Attempt: 1, Input: json.RawMessage(tt.input)}
			_, err := a.Handle(t.Context(), req, nopEmitter{})
			if !errors.Is(err, agents.ErrPermanent) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("input %s: %v, want a permanent failure naming %s", tt.input, err, tt.want)
			}
		})
	}
}

// TestBadInputRefusedAtSubmission: the agent registers its input schema,
// so a plan whose workflow step has a bad input is refused when it is
// submitted, with the pointer into the plan.
func TestBadInputRefusedAtSubmission(t *testing.T) {
	w := start(t, subworkflow.Config{})
	ctx := ctxT(t)
	sub, err := w.c.Submit(ctx, client.Submission{Query: "x", Plan: parentPlan(`{"query":"a","timeout":"soon"}`)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.c.Wait(ctx, sub.WorkflowID)
	if we := (*client.WorkflowError)(nil); !errors.As(err, &we) || !strings.Contains(err.Error(), "/plan/steps/0/input/timeout") {
		t.Fatalf("a bad input: %v, want it refused naming /plan/steps/0/input/timeout", err)
	}
	if n := w.agent.calls.Load(); n != 0 {
		t.Fatalf("the agent ran %d times, want never", n)
	}
	t.Logf("refused: %v", err)
}
