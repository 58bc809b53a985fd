package events_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/events"
)

// headerText serialises a header as "key:value" lines, one per value, in
// sorted key order; parseHeader reads it back. Keys cannot hold ':' or '\n'
// and values cannot hold '\n', which NATS headers forbid anyway.
func headerText(h map[string][]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			b.WriteString(k + ":" + v + "\n")
		}
	}
	return b.String()
}

func parseHeader(s string) map[string][]string {
	h := map[string][]string{}
	for line := range strings.SplitSeq(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		h[k] = append(h[k], v)
	}
	return h
}

// FuzzDecode feeds Decode arbitrary headers and bodies. Decode must never
// panic, must fail only with a *DecodeError, and anything it accepts must
// survive Encode and Decode again unchanged: an event the bus accepted once
// can always be forwarded.
func FuzzDecode(f *testing.F) {
	for _, typ := range events.Types() {
		h, d := encoded(f, typ)
		f.Add(headerText(h), d)
	}
	// Canonicalised and partial variants, and a few near misses.
	h, d := encoded(f, events.TypeStatus)
	canon := map[string][]string{}
	for k, v := range h {
		canon[canonical(k)] = v
	}
	f.Add(headerText(canon), d)
	for _, k := range []string{"ce-time", "ce-subject", "ce-workflowid", "ce-stepid", "ce-traceparent", "Content-Type", "ce-datacontenttype", "ce-tenantid"} {
		p := parseHeader(headerText(h))
		delete(p, k)
		f.Add(headerText(p), d)
	}
	for k, v := range map[string]string{
		"ce-time":            "0000-01-01T00:00:00+01:00",
		"ce-subject":         " ",
		"ce-source":          "%zz",
		"ce-specversion":     "0.3",
		"ce-tenantid":        "Bad.Tenant",
		"Content-Type":       "application/json; charset=utf-8",
		"ce-datacontenttype": "text/plain",
	} {
		p := parseHeader(headerText(h))
		p[k] = []string{v}
		f.Add(headerText(p), d)
	}
	f.Add("", []byte(nil))
	f.Add(headerText(h), []byte(`{"state":`))

	f.Fuzz(func(t *testing.T, header string, data []byte) {
		h := parseHeader(header)
		e, err := events.Decode(h, data)
		if err != nil {
			var de *events.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, events.ErrMalformed) {
				t.Fatalf("Decode error %T %v is not a *DecodeError", err, err)
			}
			if de.Where == "" || de.Reason == "" {
				t.Fatalf("DecodeError %+v lacks Where or Reason", de)
			}
			return
		}
		if !e.Type.Known() {
			t.Fatalf("Decode accepted unknown type %q", e.Type)
		}
		msg, err := events.Encode(e)
		if err != nil {
			t.Fatalf("Decode accepted %+v but Encode rejects it: %v", e, err)
		}
		again, err := events.Decode(msg.Header, msg.Data)
		if err != nil {
			t.Fatalf("re-encoded %+v does not decode: %v\nheader: %v", e, err, msg.Header)
		}
		assertEqualEnvelope(t, again, e)
	})
}
