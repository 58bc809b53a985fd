package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
)

var (
	when    = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)
	allKind = []events.Type{
		events.TypeWorkflowSubmitted, events.TypeStepRequested, events.TypeStepCompleted,
		events.TypeStepFailed, events.TypeControl, events.TypeStatus, events.TypeProgress,
		events.TypeArtifact, events.TypeError, events.TypeComplete, events.TypeCancelled, events.TypeDeadline, events.TypeScheduleFire,
		events.TypeCustom, events.TypeStepRunning,
	}
)

// payloads holds a realistic payload for every event type: a pointer to the
// payload struct, so that decoding into a fresh value of the same type and
// comparing shows the data survived the trip. Raw JSON is compact, as
// encoding/json re-emits it.
var payloads = map[events.Type]any{
	events.TypeWorkflowSubmitted: &events.WorkflowSubmitted{
		Query: "summarize this week's NATS news",
		Plan: &events.Plan{Steps: []events.PlanStep{
			{ID: "search", Capability: "web-search", Input: json.RawMessage(`{"q":"nats jetstream","limit":5}`)},
			{ID: "fetch", Capability: "http_fetch"},
			{ID: "Summarize", Capability: "summarize", DependsOn: []string{"search", "fetch"}},
		}},
		Metadata: map[string]string{"origin": "cli", "user": "ada"},
	},
	events.TypeStepRequested: &events.StepRequested{
		StepID: "Summarize", Capability: "summarize", Attempt: 2,
		Query: "summarize this week's NATS news",
		Input: json.RawMessage(`{"style":"bullets"}`),
		DependencyOutputs: map[string]json.RawMessage{
			"search": json.RawMessage(`["https://nats.io/blog"]`),
			"fetch":  json.RawMessage(`"NATS 2.11 is out…"`),
		},
	},
	events.TypeStepCompleted: &events.StepCompleted{
		StepID: "search", Capability: "web-search", Attempt: 1,
		Output: json.RawMessage(`{"hits":["https://nats.io/blog"]}`), Worker: "agent-web-7", DurationMS: 812.5,
	},
	events.TypeStepFailed: &events.StepFailed{
		StepID: "fetch", Capability: "http_fetch", Attempt: 3, Error: "GET https://example.com: timeout",
		Retryable: true, Worker: "agent-http-2",
	},
	events.TypeStepRunning: &events.StepRunning{StepID: "fetch", Capability: "http_fetch", Attempt: 2, Worker: "agent-http-2"},
	events.TypeControl:     &events.Control{Action: "cancel", Reason: "user pressed stop"},
	events.TypeStatus:      &events.Status{State: events.StateWorking, StepID: "search", Message: "searching"},
	events.TypeProgress: &events.Progress{
		CompletedSteps: 2, TotalSteps: 3, Percent: 66.67, StepID: "fetch", Message: "fetched 1 page",
	},
	events.TypeArtifact: &events.Artifact{
		ArtifactID: "summary", StepID: "Summarize", Name: "summary.md",
		Data: json.RawMessage(`"- NATS 2.11 released\n"`), Append: true, LastChunk: true,
	},
	events.TypeError: &events.Error{
		Code: events.CodeCycle, Message: "steps a and b depend on each other", Pointer: "/plan/steps/1/depends_on/0",
	},
	events.TypeComplete: &events.Complete{
		Result: json.RawMessage(`{"summary":"- NATS 2.11 released"}`),
		Outputs: map[string]json.RawMessage{
			"search":    json.RawMessage(`{"hits":["https://nats.io/blog"]}`),
			"Summarize": json.RawMessage(`{"summary":"- NATS 2.11 released"}`),
		},
		DurationMS: 4021,
	},
	events.TypeCancelled:    &events.Cancelled{Reason: "canceled by user"},
	events.TypeDeadline:     &events.Deadline{At: time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)},
	events.TypeScheduleFire: &events.ScheduleFire{ScheduleID: "nightly", Kind: events.FireScheduled, Generation: 3},
	events.TypeCustom:       &events.Custom{Payload: json.RawMessage(`{"ticket":"OPS-12"}`), Metadata: map[string]string{"source": "jira"}},
}

func TestTypes(t *testing.T) {
	got := events.Types()
	slices.Sort(got)
	want := slices.Clone(allKind)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Types() = %q, want %q", got, want)
	}
	names := schemas.Names()
	for _, typ := range allKind {
		if !typ.Known() {
			t.Errorf("%s.Known() = false", typ)
		}
		if !slices.Contains(names, typ.Schema()) {
			t.Errorf("%s.Schema() = %q, not one of schemas.Names() %q", typ, typ.Schema(), names)
		}
		if !strings.HasPrefix(string(typ), "io.agentbus.") || !strings.HasSuffix(string(typ), ".v1") {
			t.Errorf("type %q is not reverse-DNS and versioned", typ)
		}
		if _, ok := payloads[typ]; !ok {
			t.Errorf("no test payload for %s", typ)
		}
	}
}

func TestTypeMethods(t *testing.T) {
	tests := []struct {
		typ      events.Type
		short    string
		known    bool
		terminal bool
	}{
		{events.TypeWorkflowSubmitted, "submitted", true, false},
		{events.TypeStepRequested, "step.requested", true, false},
		{events.TypeStepCompleted, "step.completed", true, false},
		{events.TypeStepFailed, "step.failed", true, false},
		{events.TypeControl, "control", true, false},
		{events.TypeStatus, "status", true, false},
		{events.TypeProgress, "progress", true, false},
		{events.TypeArtifact, "artifact", true, false},
		{events.TypeError, "error", true, true},
		{events.TypeComplete, "complete", true, true},
		{events.TypeCancelled, "cancelled", true, true},
		{events.TypeCustom, "custom", true, false},
		{"io.agentbus.workflow.status.v2", "workflow.status.v2", false, false},
		{"com.example.thing", "com.example.thing", false, false},
		{"", "", false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			if got := tt.typ.Short(); got != tt.short {
				t.Errorf("Short() = %q, want %q", got, tt.short)
			}
			if got := tt.typ.Known(); got != tt.known {
				t.Errorf("Known() = %v, want %v", got, tt.known)
			}
			if got := tt.typ.Terminal(); got != tt.terminal {
				t.Errorf("Terminal() = %v, want %v", got, tt.terminal)
			}
			if !tt.known && tt.typ.Schema() != "" {
				t.Errorf("Schema() = %q for an unknown type, want \"\"", tt.typ.Schema())
			}
			f := events.Frame{Type: tt.typ.Short()}
			if got := f.Terminal(); got != tt.terminal {
				t.Errorf("Frame{Type: %q}.Terminal() = %v, want %v", f.Type, got, tt.terminal)
			}
		})
	}
}

func TestShortNamesAreDistinct(t *testing.T) {
	seen := map[string]events.Type{}
	for _, typ := range events.Types() {
		if other, ok := seen[typ.Short()]; ok {
			t.Errorf("%s and %s share the short name %q", typ, other, typ.Short())
		}
		seen[typ.Short()] = typ
	}
}

func TestStateTerminal(t *testing.T) {
	tests := []struct {
		s    events.State
		want bool
	}{
		{events.StateSubmitted, false},
		{events.StateWorking, false},
		{events.StateInputRequired, false},
		{events.StateCompleted, true},
		{events.StateFailed, true},
		{events.StateCanceled, true},
		{events.StateRejected, true},
		{"cancelled", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(string(tt.s), func(t *testing.T) {
			if got := tt.s.Terminal(); got != tt.want {
				t.Errorf("State(%q).Terminal() = %v, want %v", tt.s, got, tt.want)
			}
		})
	}
}

// TestStatesMatchSchema keeps the State constants and the status schema's
// enum in step.
func TestStatesMatchSchema(t *testing.T) {
	for _, s := range []events.State{
		events.StateSubmitted, events.StateWorking, events.StateInputRequired, events.StateCompleted,
		events.StateFailed, events.StateCanceled, events.StateRejected,
	} {
		b, _ := json.Marshal(events.Status{State: s})
		if err := schemas.Validate(events.TypeStatus.Schema(), b); err != nil {
			t.Errorf("state %q rejected by the status schema: %v", s, err)
		}
	}
	b, _ := json.Marshal(events.Status{State: "cancelled"})
	if err := schemas.Validate(events.TypeStatus.Schema(), b); err == nil {
		t.Error(`state "cancelled" accepted by the status schema`)
	}
}

// envelope returns a complete, valid envelope of type typ with its test payload.
func envelope(t testing.TB, typ events.Type) events.Envelope {
	t.Helper()
	data, err := json.Marshal(payloads[typ])
	if err != nil {
		t.Fatal(err)
	}
	return events.Envelope{
		ID:          events.StepKey("acme", "wf-42", "search", 1),
		Source:      events.SourceOrchestrator,
		Type:        typ,
		Time:        when,
		Subject:     "wf-42/search",
		TenantID:    "acme",
		WorkflowID:  "wf-42",
		StepID:      "search",
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		Data:        data,
	}
}

func assertEqualEnvelope(t testing.TB, got, want events.Envelope) {
	t.Helper()
	if !got.Time.Equal(want.Time) {
		t.Errorf("Time = %v, want %v", got.Time, want.Time)
	}
	if got.Time.Location() != time.UTC {
		t.Errorf("Time location = %v, want UTC", got.Time.Location())
	}
	if !bytes.Equal(got.Data, want.Data) {
		t.Errorf("Data = %s, want %s", got.Data, want.Data)
	}
	fields := []struct{ name, got, want string }{
		{"ID", got.ID, want.ID},
		{"Source", got.Source, want.Source},
		{"Type", string(got.Type), string(want.Type)},
		{"Subject", got.Subject, want.Subject},
		{"TenantID", got.TenantID, want.TenantID},
		{"WorkflowID", got.WorkflowID, want.WorkflowID},
		{"StepID", got.StepID, want.StepID},
		{"TraceParent", got.TraceParent, want.TraceParent},
	}
	for _, f := range fields {
		if f.got != f.want {
			t.Errorf("%s = %q, want %q", f.name, f.got, f.want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, typ := range events.Types() {
		t.Run(typ.Short(), func(t *testing.T) {
			in := envelope(t, typ)
			msg, err := events.Encode(in)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			out, err := events.Decode(msg.Header, msg.Data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			assertEqualEnvelope(t, out, in)

			want := payloads[typ]
			got := reflect.New(reflect.TypeOf(want).Elem()).Interface()
			if err := out.Unmarshal(got); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("payload = %+v, want %+v", got, want)
			}
		})
	}
}

func TestRoundTripMinimal(t *testing.T) {
	// Only the required attributes: optional headers are omitted, not sent empty.
	in := events.Envelope{
		ID: "x", Source: "/s", Type: events.TypeCancelled, Time: when, TenantID: "t", Data: []byte(`{}`),
	}
	msg, err := events.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{events.HeaderSubject, events.HeaderWorkflow, events.HeaderStep, events.HeaderTraceParent} {
		if _, ok := msg.Header[k]; ok {
			t.Errorf("header %s sent for an empty field", k)
		}
	}
	out, err := events.Decode(msg.Header, msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	assertEqualEnvelope(t, out, in)
}

func TestEncodeHeaders(t *testing.T) {
	in := envelope(t, events.TypeStatus)
	in.Time = time.Date(2025, 1, 2, 4, 4, 5, 6, time.FixedZone("CET", 3600))
	msg, err := events.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"ce-specversion":     {"1.0"},
		"ce-id":              {in.ID},
		"ce-source":          {in.Source},
		"ce-type":            {string(events.TypeStatus)},
		"ce-time":            {"2025-01-02T03:04:05.000000006Z"},
		"ce-datacontenttype": {"application/json"},
		"ce-tenantid":        {"acme"},
		"ce-workflowid":      {"wf-42"},
		"ce-stepid":          {"search"},
		"ce-subject":         {in.Subject},
		"ce-traceparent":     {in.TraceParent},
	}
	if !maps.EqualFunc(msg.Header, want, slices.Equal) {
		t.Fatalf("headers = %v\nwant      %v", msg.Header, want)
	}
	if !bytes.Equal(msg.Data, in.Data) {
		t.Fatalf("data = %s, want %s", msg.Data, in.Data)
	}
}

func TestEncodeRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*events.Envelope)
		field  string // substring the error must contain
	}{
		{"no id", func(e *events.Envelope) { e.ID = "" }, "id"},
		{"blank id", func(e *events.Envelope) { e.ID = "  " }, "id"},
		{"no source", func(e *events.Envelope) { e.Source = "" }, "source"},
		{"bad source", func(e *events.Envelope) { e.Source = "%zz" }, "source"},
		{"no type", func(e *events.Envelope) { e.Type = "" }, "type"},
		{"no tenant", func(e *events.Envelope) { e.TenantID = "" }, "tenant"},
		{"bad tenant", func(e *events.Envelope) { e.TenantID = "Bad.Tenant" }, "tenant"},
		{"bad workflow", func(e *events.Envelope) { e.WorkflowID = "wf.1" }, "workflow"},
		{"bad step", func(e *events.Envelope) { e.StepID = "a/b" }, "step"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := envelope(t, events.TypeStatus)
			tt.mutate(&e)
			msg, err := events.Encode(e)
			if err == nil {
				t.Fatalf("Encode = %v, want an error", msg.Header)
			}
			if !strings.HasPrefix(err.Error(), "events: ") && !strings.HasPrefix(err.Error(), "subjects: ") {
				t.Errorf("error %q has no package prefix", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q does not mention %q", err, tt.field)
			}
		})
	}
}

// encoded returns the header and data of a valid encoded event of type typ.
func encoded(t testing.TB, typ events.Type) (map[string][]string, []byte) {
	t.Helper()
	msg, err := events.Encode(envelope(t, typ))
	if err != nil {
		t.Fatal(err)
	}
	return msg.Header, msg.Data
}

func TestDecodeRejects(t *testing.T) {
	set := func(k, v string) func(map[string][]string, *[]byte) {
		return func(h map[string][]string, _ *[]byte) { h[k] = []string{v} }
	}
	del := func(k string) func(map[string][]string, *[]byte) {
		return func(h map[string][]string, _ *[]byte) { delete(h, k) }
	}
	data := func(s string) func(map[string][]string, *[]byte) {
		return func(_ map[string][]string, d *[]byte) { *d = []byte(s) }
	}
	tests := []struct {
		name   string
		typ    events.Type
		mutate func(map[string][]string, *[]byte)
		where  string
	}{
		{"missing id", events.TypeStatus, del("ce-id"), "ce-id"},
		{"empty id", events.TypeStatus, set("ce-id", ""), "ce-id"},
		{"id with no values", events.TypeStatus, func(h map[string][]string, _ *[]byte) { h["ce-id"] = nil }, "ce-id"},
		{"blank id", events.TypeStatus, set("ce-id", "   "), "ce-*"},
		{"missing source", events.TypeStatus, del("ce-source"), "ce-source"},
		{"bad source", events.TypeStatus, set("ce-source", "%zz"), "ce-*"},
		{"missing type", events.TypeStatus, del("ce-type"), "ce-type"},
		{"missing specversion", events.TypeStatus, del("ce-specversion"), "ce-specversion"},
		{"wrong specversion", events.TypeStatus, set("ce-specversion", "0.3"), "ce-specversion"},
		{"missing tenant", events.TypeStatus, del("ce-tenantid"), "ce-tenantid"},
		{"bad tenant", events.TypeStatus, set("ce-tenantid", "Bad.Tenant"), "ce-tenantid"},
		{"wildcard tenant", events.TypeStatus, set("ce-tenantid", "*"), "ce-tenantid"},
		{"bad workflow", events.TypeStatus, set("ce-workflowid", "wf 42"), "ce-workflowid"},
		{"bad step", events.TypeStatus, set("ce-stepid", "a/b"), "ce-stepid"},
		{"unknown type", events.TypeStatus, set("ce-type", "io.agentbus.workflow.status.v2"), "ce-type"},
		{"bad time", events.TypeStatus, set("ce-time", "yesterday"), "ce-time"},
		{"time without zone", events.TypeStatus, set("ce-time", "2025-03-14T15:09:26"), "ce-time"},
		{"time before year 0 in UTC", events.TypeStatus, set("ce-time", "0000-01-01T00:00:00+01:00"), "ce-time"},
		{"time after year 9999 in UTC", events.TypeStatus, set("ce-time", "9999-12-31T23:00:00-01:00"), "ce-time"},
		{"wrong content type", events.TypeStatus, set("Content-Type", "text/plain"), "Content-Type"},
		{"protobuf content type", events.TypeStatus, set("Content-Type", "application/protobuf"), "Content-Type"},
		{"wrong datacontenttype", events.TypeStatus, set("ce-datacontenttype", "text/plain"), "ce-datacontenttype"},
		{"structured mode", events.TypeStatus, set("Content-Type", "application/cloudevents+json"), "Content-Type"},
		{"data not JSON", events.TypeStatus, data(`{"state":`), "data"},
		{"empty data", events.TypeStatus, data(``), "data"},
		{"data fails schema", events.TypeWorkflowSubmitted,
			data(`{"plan":{"steps":[{"id":"a","capability":"Web.Search"}]}}`), "data/plan/steps/0/capability"},
		{"data missing required", events.TypeStepRequested,
			data(`{"step_id":"a","capability":"echo"}`), "data/attempt"},
		{"data wrong enum", events.TypeStatus, data(`{"state":"done"}`), "data/state"},
		{"data bad key", events.TypeComplete, data(`{"result":1,"outputs":{"a.b":1}}`), "data/outputs/a.b"},
		{"data of another type", events.TypeControl, data(`{"state":"working"}`), "data/action"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, d := encoded(t, tt.typ)
			tt.mutate(h, &d)
			e, err := events.Decode(h, d)
			if err == nil {
				t.Fatalf("Decode = %+v, want an error at %s", e, tt.where)
			}
			if !errors.Is(err, events.ErrMalformed) {
				t.Errorf("errors.Is(%v, ErrMalformed) = false", err)
			}
			var de *events.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode error %T %v, want *DecodeError", err, err)
			}
			if de.Where != tt.where {
				t.Fatalf("Where = %q, want %q (reason: %s)", de.Where, tt.where, de.Reason)
			}
			if de.Reason == "" {
				t.Error("Reason is empty")
			}
			if want := "events: malformed event at " + tt.where + ": "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Error() = %q, want prefix %q", err, want)
			}
			if !reflect.DeepEqual(e, events.Envelope{}) {
				t.Errorf("Decode returned %+v alongside an error, want zero", e)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(map[string][]string)
	}{
		{"no content type", func(h map[string][]string) { delete(h, "Content-Type") }},
		{"no content type at all", func(h map[string][]string) { delete(h, "Content-Type"); delete(h, "ce-datacontenttype") }},
		// The CloudEvents SDK's NATS binding writes only ce-datacontenttype.
		{"datacontenttype with charset only", func(h map[string][]string) {
			delete(h, "Content-Type")
			h["ce-datacontenttype"] = []string{"application/json; charset=utf-8"}
		}},
		{"content type with charset", func(h map[string][]string) { h["Content-Type"] = []string{"application/json; charset=utf-8"} }},
		{"no time", func(h map[string][]string) { delete(h, "ce-time") }},
		{"time with offset", func(h map[string][]string) { h["ce-time"] = []string{"2025-03-14T16:09:26.535897932+01:00"} }},
		{"no workflow", func(h map[string][]string) { delete(h, "ce-workflowid") }},
		{"no step", func(h map[string][]string) { delete(h, "ce-stepid") }},
		{"extra header", func(h map[string][]string) { h["Nats-Msg-Id"] = []string{"acme/wf-42/event/1"} }},
		{"extra values ignored", func(h map[string][]string) { h["ce-tenantid"] = append(h["ce-tenantid"], "Bad.Tenant") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, d := encoded(t, events.TypeStatus)
			tt.mutate(h)
			e, err := events.Decode(h, d)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if e.TenantID != "acme" || e.Type != events.TypeStatus {
				t.Fatalf("Decode = %+v", e)
			}
		})
	}

	h, d := encoded(t, events.TypeStatus)
	h["ce-time"] = []string{"2025-03-14T16:09:26.535897932+01:00"}
	e, err := events.Decode(h, d)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Time.Equal(when) || e.Time.Location() != time.UTC {
		t.Errorf("Time = %v, want %v in UTC", e.Time, when)
	}
	delete(h, "ce-time")
	if e, err = events.Decode(h, d); err != nil || !e.Time.IsZero() {
		t.Errorf("Decode without ce-time: Time = %v, err = %v; want zero time", e.Time, err)
	}
}

func TestDecodeCaseInsensitiveHeaders(t *testing.T) {
	in := envelope(t, events.TypeStepCompleted)
	msg, err := events.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	for name, rename := range map[string]func(string) string{
		"canonical": canonical,
		"upper":     strings.ToUpper,
		"lower":     strings.ToLower,
	} {
		t.Run(name, func(t *testing.T) {
			h := map[string][]string{}
			for k, v := range msg.Header {
				h[rename(k)] = v
			}
			if _, ok := h["Ce-Id"]; name == "canonical" && !ok {
				t.Fatalf("canonical headers %v lack Ce-Id", h)
			}
			out, err := events.Decode(h, msg.Data)
			if err != nil {
				t.Fatalf("Decode(%v): %v", h, err)
			}
			assertEqualEnvelope(t, out, in)
		})
	}

	// The exact name wins over a differently cased duplicate.
	h := maps.Clone(msg.Header)
	h["CE-TENANTID"] = []string{"other"}
	for range 20 { // map order varies; the exact match must win every time
		out, err := events.Decode(h, msg.Data)
		if err != nil || out.TenantID != "acme" {
			t.Fatalf("Decode with a duplicate header: tenant %q, err %v; want acme", out.TenantID, err)
		}
	}
}

// canonical spells a header the way net/textproto does: Ce-Tenantid.
func canonical(k string) string {
	parts := strings.Split(strings.ToLower(k), "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "-")
}

func TestNew(t *testing.T) {
	p := &events.Progress{CompletedSteps: 1, TotalSteps: 2, Percent: 50}
	before := time.Now()
	e, err := events.New(events.TypeProgress, "k", events.SourceGateway, "acme", "wf1", "s1", p)
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if e.Type != events.TypeProgress || e.ID != "k" || e.Source != events.SourceGateway ||
		e.TenantID != "acme" || e.WorkflowID != "wf1" || e.StepID != "s1" {
		t.Fatalf("New = %+v", e)
	}
	if e.Time.Location() != time.UTC || e.Time.Before(before.Add(-time.Second)) || e.Time.After(after.Add(time.Second)) {
		t.Errorf("Time = %v, want now in UTC", e.Time)
	}
	if want := `{"completed_steps":1,"total_steps":2,"percent":50}`; string(e.Data) != want {
		t.Errorf("Data = %s, want %s", e.Data, want)
	}
	msg, err := events.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := events.Decode(msg.Header, msg.Data); err != nil {
		t.Fatalf("an envelope from New does not decode: %v", err)
	}

	if _, err := events.New(events.TypeProgress, "k", events.SourceGateway, "acme", "wf1", "", make(chan int)); err == nil {
		t.Fatal("New with an unmarshalable payload succeeded")
	} else if !strings.HasPrefix(err.Error(), "events: marshal "+string(events.TypeProgress)) {
		t.Errorf("error = %q", err)
	}
}

func TestUnmarshalError(t *testing.T) {
	e := events.Envelope{Data: json.RawMessage(`{"attempt":"one"}`)}
	var v events.StepRequested
	err := e.Unmarshal(&v)
	var de *events.DecodeError
	if !errors.As(err, &de) || de.Where != "data" || !errors.Is(err, events.ErrMalformed) {
		t.Fatalf("Unmarshal = %v, want *DecodeError at data", err)
	}
}

func TestNewFrame(t *testing.T) {
	e := envelope(t, events.TypeComplete)
	f := events.NewFrame(e, 17, "epoch-1")
	want := events.Frame{
		Offset: 17, Epoch: "epoch-1", Type: "complete", WorkflowID: "wf-42", TenantID: "acme",
		Time: when, StepID: "search", Data: e.Data,
	}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("NewFrame = %+v, want %+v", f, want)
	}
	if !f.Terminal() {
		t.Error("a complete frame is not terminal")
	}

	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(fields))
	if wantKeys := []string{"data", "epoch", "offset", "step_id", "tenant_id", "time", "type", "workflow_id"}; !slices.Equal(keys, wantKeys) {
		t.Errorf("frame JSON keys = %q, want %q", keys, wantKeys)
	}
	if string(fields["time"]) != `"2025-03-14T15:09:26.535897932Z"` {
		t.Errorf("time = %s", fields["time"])
	}

	e.StepID = ""
	b, _ = json.Marshal(events.NewFrame(e, 1, "x"))
	if bytes.Contains(b, []byte(`"step_id"`)) {
		t.Errorf("step_id sent for a workflow-level frame: %s", b)
	}
}

func TestDedupKeys(t *testing.T) {
	if got, want := events.SubmitKey("acme", "wf1"), "acme/wf1/submit"; got != want {
		t.Errorf("SubmitKey = %q, want %q", got, want)
	}
	if got, want := events.StepKey("acme", "wf1", "search", 2), "acme/wf1/search/2"; got != want {
		t.Errorf("StepKey = %q, want %q", got, want)
	}
	if got, want := events.EventKey("acme", "wf1", 7), "acme/wf1/7"; got != want {
		t.Errorf("EventKey = %q, want %q", got, want)
	}

	// Injective within a kind for valid ids: no two distinct publishes share
	// a key in the stream that dedups them.
	seen := map[string]string{}
	add := func(key, what string) {
		t.Helper()
		if prev, ok := seen[key]; ok {
			t.Errorf("key %q used by both %s and %s", key, prev, what)
		}
		seen[key] = what
	}
	ids := []string{"a", "b", "a-b", "ab"}
	for _, tn := range ids {
		for _, wf := range ids {
			add(events.SubmitKey(tn, wf), "submit "+tn+" "+wf)
		}
	}
	clear(seen)
	for _, tn := range ids {
		for _, wf := range ids {
			for _, st := range ids {
				for attempt := 1; attempt <= 12; attempt++ {
					add(events.StepKey(tn, wf, st, attempt), fmt.Sprintf("step %s %s %s %d", tn, wf, st, attempt))
				}
			}
		}
	}
	clear(seen)
	for _, tn := range ids {
		for _, wf := range ids {
			for n := range 12 {
				add(events.EventKey(tn, wf, n), fmt.Sprintf("event %s %s %d", tn, wf, n))
			}
		}
	}
}
