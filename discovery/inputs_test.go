package discovery_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentbus/agentbus/discovery"
	"github.com/agentbus/agentbus/events"
)

func TestCheckInputs(t *testing.T) {
	_, reg := newRegistry(t)
	// The index starts before the registration: CheckInputs must find it
	// even if the index's watch has not delivered it yet.
	if err := reg.CheckInputs(t.Context(), events.Plan{}); err != nil {
		t.Fatal(err)
	}
	r := registration(t, "w1-adder", "adder", "adds numbers", "add", "noschema")
	r.InputSchemas = map[string]json.RawMessage{"add": json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)}
	put(t, reg, r, time.Minute)
	step := func(id, capability, input string) events.PlanStep {
		return events.PlanStep{ID: id, Capability: capability, Input: json.RawMessage(input)}
	}
	for _, tc := range []struct {
		name    string
		plan    []events.PlanStep
		pointer string // "" when the plan passes
	}{
		{"fits", []events.PlanStep{step("A", "add", `{"a":1,"b":2}`)}, ""},
		{"no schema", []events.PlanStep{step("A", "noschema", `"anything"`)}, ""},
		{"unknown capability", []events.PlanStep{step("A", "teleport", `1`)}, ""},
		{"wrong type", []events.PlanStep{step("A", "echo", `{}`), step("B", "add", `{"a":"one","b":2}`)}, "/plan/steps/1/input/a"},
		{"no input is {}", []events.PlanStep{step("A", "add", ``)}, "/plan/steps/0/input/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := reg.CheckInputs(t.Context(), events.Plan{Steps: tc.plan})
			var ie *discovery.InputError
			switch {
			case tc.pointer == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.pointer != "" && (!errors.As(err, &ie) || ie.Pointer() != tc.pointer || ie.Capability != "add"):
				t.Fatalf("%v, want an InputError at %s", err, tc.pointer)
			}
		})
	}
}
