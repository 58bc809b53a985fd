package events_test

import (
	"encoding/json"
	"testing"

	"github.com/agentbus/agentbus/events"
)

// MarshalData, and MarshalChecked for data with valid raw values, write
// what encoding/json writes, byte for byte: map keys sorted, HTML escaped,
// raw values compacted, floats formatted alike.
func TestMarshalDataIsEncodingJSON(t *testing.T) {
	for _, p := range marshalPayloads {
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		for name, marshal := range map[string]func(any) ([]byte, error){"MarshalData": events.MarshalData, "MarshalChecked": events.MarshalChecked} {
			got, err := marshal(p)
			if err != nil {
				t.Fatalf("%s %T: %v", name, p, err)
			}
			if string(got) != string(want) {
				t.Errorf("%s %T:\n got  %s\n want %s", name, p, got, want)
			}
		}
	}
}

// TestMarshalDataRefusesABadRawValue: MarshalData checks raw values (a
// payload from an agent); MarshalChecked, for values checked on their
// way in, does not.
func TestMarshalDataRefusesABadRawValue(t *testing.T) {
	bad := events.Artifact{ArtifactID: "x", Data: json.RawMessage(`{"a":`)}
	if _, err := events.MarshalData(bad); err == nil {
		t.Error("MarshalData took a raw value that is not JSON")
	}
	if _, err := json.Marshal(bad); err == nil {
		t.Error("encoding/json took a raw value that is not JSON")
	}
}

var marshalPayloads = []any{
	events.Status{State: events.StateCompleted, StepID: "s1", Message: "completed on <w1> & co", CompletedSteps: 1, TotalSteps: 3,
		Artifact: &events.Artifact{ArtifactID: "s1.output", Name: "echo output", Data: json.RawMessage(`{ "b" : [1, 2.50, "<x>"], "a":null }`), LastChunk: true}},
	events.StepRequested{StepID: "b", Capability: "echo", Attempt: 2, Query: "q \u2028 \xff", Input: json.RawMessage(" \"in\" "),
		DependencyOutputs: map[string]json.RawMessage{"z": json.RawMessage(`{"k":1e21}`), "a": json.RawMessage(`"v"`)},
		Problems:          []events.StepProblem{{StepID: "p", Capability: "broken", Kind: events.ProblemFailed, Error: "no model"}}},
	events.Complete{Result: json.RawMessage(`{"answer":"x"}`), Outputs: map[string]json.RawMessage{"b": json.RawMessage(`1`), "a": json.RawMessage(`null`)},
		Partial: true, DurationMS: 3.395, PhaseLatency: events.PhaseLatency{PlanningMS: 1.0e-7, QueueMS: 8.514}},
	events.Artifact{ArtifactID: "answer", Data: json.RawMessage(`"chunk \u003c"`), Append: true},
	map[string]any{"b": 1.5, "a": []any{int64(1) << 60, float32(0.1), "é"}},
}

// UnmarshalData decodes what encoding/json decodes, and refuses what it
// refuses with encoding/json's own error, which names the Go field.
func TestUnmarshalDataIsEncodingJSON(t *testing.T) {
	good := `{"step_id":"s","capability":"echo","attempt":1,"output":{"x":[1,2]},"duration_ms":1.5}`
	var a, b events.StepCompleted
	if err := events.UnmarshalData([]byte(good), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(good), &b); err != nil {
		t.Fatal(err)
	}
	if ja, jb := mustJSON(t, a), mustJSON(t, b); string(ja) != string(jb) {
		t.Fatalf("decoded %s, encoding/json %s", ja, jb)
	}
	for _, bad := range []string{`{"attempt":"one"}`, `{"step_id":"s"`, `{"step_id":"s"} x`, `{"output":nul}`, `{"attempt":99999999999999999999}`, ``} {
		var v events.StepCompleted
		got := events.UnmarshalData([]byte(bad), &v)
		want := json.Unmarshal([]byte(bad), &events.StepCompleted{})
		if got == nil || want == nil || got.Error() != want.Error() {
			t.Errorf("%q: error %v, encoding/json's %v", bad, got, want)
		}
	}
}
