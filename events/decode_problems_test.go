package events_test

import (
	"errors"
	"testing"

	"github.com/agentbus/agentbus/events"
)

// A progress event from an agent outside Go that leaves out two required
// fields is refused naming both, so its author fixes them at once.
func TestDecodeNamesEveryProblemInTheData(t *testing.T) {
	h := map[string][]string{"ce-specversion": {"1.0"}, "ce-id": {"p1"}, "ce-source": {"/python/agent"},
		"ce-type": {string(events.TypeProgress)}, "ce-tenantid": {"acme"}, "ce-workflowid": {"wf-1"}}
	_, err := events.Decode(h, []byte(`{"percent": 50, "message": "half way"}`))
	var de *events.DecodeError
	if !errors.As(err, &de) || !errors.Is(err, events.ErrMalformed) {
		t.Fatalf("err %v, want a *DecodeError", err)
	}
	if de.Where != "data/completed_steps" || len(de.More) != 1 || de.More[0].Pointer != "data/total_steps" {
		t.Fatalf("problems at %s and %+v, want data/completed_steps and data/total_steps", de.Where, de.More)
	}
	const want = "events: malformed event at data/completed_steps: required property is missing; data/total_steps: required property is missing"
	if err.Error() != want {
		t.Fatalf("error %q\nwant  %q", err, want)
	}
}
