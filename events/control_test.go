package events_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/events"
)

func TestDecodeControl(t *testing.T) {
	const subj = "agentbus.acme.control.wf-1"
	full := func(mod func(h map[string][]string)) map[string][]string {
		h := map[string][]string{
			"ce-specversion": {"1.0"}, "ce-id": {"c1"}, "ce-source": {"/my/client"},
			"ce-type": {string(events.TypeControl)}, "ce-tenantid": {"acme"}, "ce-workflowid": {"wf-1"},
			"Content-Type": {"application/json"},
		}
		if mod != nil {
			mod(h)
		}
		return h
	}
	ok := []struct {
		name   string
		header map[string][]string
		body   string
		want   events.Control
	}{
		{"bare cancel", nil, `{"action":"cancel","reason":"changed my mind"}`, events.Control{Action: "cancel", Reason: "changed my mind"}},
		{"bare with unrelated headers", map[string][]string{"X-Trace": {"1"}}, `{"action":"resume"}`, events.Control{Action: "resume"}},
		{"bare with agreeing ids", map[string][]string{"ce-tenantid": {"acme"}, "ce-workflowid": {"wf-1"}}, `{"action":"cancel"}`, events.Control{Action: "cancel"}},
		{"bare approve of a step", nil, `{"action":"approve","step_id":"S1","reason":"fine"}`, events.Control{Action: "approve", StepID: "S1", Reason: "fine"}},
		{"full CloudEvent", full(nil), `{"action":"cancel"}`, events.Control{Action: "cancel"}},
		{"full CloudEvent, no workflow header", full(func(h map[string][]string) { delete(h, "ce-workflowid") }), `{"action":"reject"}`, events.Control{Action: "reject"}},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			env, got, err := events.DecodeControl(subj, c.header, []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("control %+v, want %+v", got, c.want)
			}
			if env.TenantID != "acme" || env.WorkflowID != "wf-1" || env.Type != events.TypeControl || env.ID == "" || env.Source == "" {
				t.Errorf("envelope %+v: want tenant, workflow and type from the subject, an id and a source", env)
			}
		})
	}
	bad := []struct {
		name, subject string
		header        map[string][]string
		body          string
		pointer, says string
	}{
		{"not JSON", subj, nil, `cancel`, "", "JSON"},
		{"no action", subj, nil, `{"reason":"x"}`, "/action", "required"},
		{"unknown action", subj, nil, `{"action":"cancle"}`, "/action", `unknown action "cancle"`},
		{"action of the wrong type", subj, nil, `{"action":1}`, "/action", ""},
		{"bad step id", subj, nil, `{"action":"approve","step_id":"a b"}`, "/step_id", ""},
		{"not a control subject", "agentbus.acme.events.wf-1", nil, `{"action":"cancel"}`, "", "not a control subject"},
		{"not agentbus", "foo", nil, `{"action":"cancel"}`, "", "not a control subject"},
		{"tenant disagrees", subj, full(func(h map[string][]string) { h["ce-tenantid"] = []string{"beta"} }), `{"action":"cancel"}`, "ce-tenantid", "disagrees"},
		{"workflow disagrees", subj, full(func(h map[string][]string) { h["ce-workflowid"] = []string{"wf-2"} }), `{"action":"cancel"}`, "ce-workflowid", "disagrees"},
		{"another type", subj, full(func(h map[string][]string) { h["ce-type"] = []string{string(events.TypeStatus)} }), `{"state":"working"}`, "ce-type", "want"},
		{"bare, tenant header disagrees", subj, map[string][]string{"ce-tenantid": {"beta"}}, `{"action":"cancel"}`, "ce-tenantid", "disagrees"},
		{"bare, workflow header disagrees", subj, map[string][]string{"Ce-Workflowid": {"wf-2"}}, `{"action":"cancel"}`, "ce-workflowid", "disagrees"},
		{"full CloudEvent, unknown action", subj, full(nil), `{"action":"cancle"}`, "/action", `unknown action "cancle": want cancel, resume, approve, reject, signal, pause or unpause`},
		{"full CloudEvent, reason of the wrong type", subj, full(nil), `{"action":"cancel","reason":5}`, "/reason", ""},
		{"half the headers", subj, map[string][]string{"ce-type": {string(events.TypeControl)}}, `{"action":"cancel"}`, "ce-specversion", "missing"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := events.DecodeControl(c.subject, c.header, []byte(c.body))
			var ce *events.ControlError
			if !errors.As(err, &ce) || !errors.Is(err, events.ErrMalformed) {
				t.Fatalf("err %v, want a *ControlError that is ErrMalformed", err)
			}
			if len(ce.Problems) == 0 || ce.Problems[0].Pointer != c.pointer || !strings.Contains(ce.Problems[0].Message, c.says) {
				t.Fatalf("problems %+v, want the first at %q saying %q", ce.Problems, c.pointer, c.says)
			}
		})
	}
}

func FuzzDecodeControl(f *testing.F) {
	f.Add("agentbus.acme.control.wf-1", `{"action":"cancel","reason":"r"}`, "")
	f.Add("agentbus.acme.control.wf-1", `{"action":"cancle"}`, string(events.TypeControl))
	f.Add("agentbus..control.", `[]`, "")
	f.Fuzz(func(t *testing.T, subject, body, typ string) {
		var h map[string][]string
		if typ != "" {
			h = map[string][]string{"ce-type": {typ}, "ce-specversion": {"1.0"}, "ce-id": {"x"}, "ce-source": {"/s"}, "ce-tenantid": {"acme"}}
		}
		env, c, err := events.DecodeControl(subject, h, []byte(body))
		if err != nil {
			var ce *events.ControlError
			if !errors.As(err, &ce) || len(ce.Problems) == 0 {
				t.Fatalf("error %v is not a ControlError with problems", err)
			}
			return
		}
		if env.Type != events.TypeControl || env.TenantID == "" || env.WorkflowID == "" || c.Action == "" {
			t.Fatalf("accepted %+v %+v without type, tenant, workflow or action", env, c)
		}
		if _, err := events.Encode(env); err != nil {
			t.Fatalf("accepted a control message that cannot be encoded again: %v", err)
		}
	})
}
