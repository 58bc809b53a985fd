package kittest

import (
	"encoding/json"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/schemas"
)

// Run hands req to h with a fresh Recorder, fails the test unless h
// succeeds with an output that satisfies the JSON Schema named schema, and
// returns the output decoded into a T and the Recorder.
func Run[T any](t testing.TB, h agents.Handler, schema string, req agents.Request) (T, *Recorder) {
	t.Helper()
	var out T
	rec := &Recorder{}
	raw, err := h.Handle(t.Context(), req, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(schema, raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out, rec
}

// Step is the request of a step named stepID with the given input (JSON)
// in a workflow whose query is workflowQuery.
func Step(stepID, input, workflowQuery string) agents.Request {
	return agents.Request{StepID: stepID, Query: workflowQuery, Input: json.RawMessage(input)}
}

// New makes an agent with newAgent(cfg) and fails the test if it cannot.
func New[A, C any](t testing.TB, newAgent func(C) (A, error), cfg C) A {
	t.Helper()
	a, err := newAgent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
