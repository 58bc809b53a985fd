package events_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/events"
)

func TestParseRef(t *testing.T) {
	ref := events.PayloadRef{Bucket: "AGENTBUS_PAYLOADS", Key: "t/w/s/1/output-0123456789abcdef", Size: 9,
		SHA256: strings.Repeat("0a", 32), ContentType: "application/json"}
	for _, tc := range []struct {
		name    string
		raw     string
		isRef   bool
		invalid bool
	}{
		{"reference", string(ref.JSON()), true, false},
		{"reference with spaces", ` { "$agentbus_ref" : ` + string(mustJSON(t, ref)) + ` } `, true, false},
		{"plain object", `{"answer":"hello"}`, false, false},
		{"string naming the key", `"$agentbus_ref"`, false, false},
		{"key beside another member", `{"$agentbus_ref":{"key":"x"},"other":1}`, false, false},
		{"json schema $ref", `{"$ref":"#/definitions/x"}`, false, false},
		{"nested reference", `{"a":` + string(ref.JSON()) + `}`, false, false},
		{"null", `null`, false, false},
		{"too long to be one", `{"$agentbus_ref":"` + strings.Repeat("x", events.MaxRefLen) + `"}`, false, false},
		{"malformed", `{"$agentbus_ref":{"key":3}}`, false, true},
		{"no digest", `{"$agentbus_ref":{"bucket":"B","key":"k","size":1}}`, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := events.ParseRef([]byte(tc.raw))
			if ok != tc.isRef || (err != nil) != tc.invalid {
				t.Fatalf("ParseRef(%.80s) = %v, %v; want %v, invalid %v", tc.raw, ok, err, tc.isRef, tc.invalid)
			}
			if tc.invalid && !errors.Is(err, events.ErrBadRef) {
				t.Fatalf("error %v is not ErrBadRef", err)
			}
			if ok && got != ref {
				t.Fatalf("got %+v, want %+v", got, ref)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzParseRef(f *testing.F) {
	f.Add([]byte(`{"$agentbus_ref":{"bucket":"B","key":"k","size":1,"sha256":"` + strings.Repeat("a", 64) + `"}}`))
	f.Add([]byte(`{"a":1}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ref, ok, err := events.ParseRef(raw)
		if ok && (err != nil || ref.Validate() != nil) {
			t.Fatalf("%s: a reference that does not validate", raw)
		}
		if ok {
			if again, ok2, _ := events.ParseRef(ref.JSON()); !ok2 || again != ref {
				t.Fatalf("%s does not round-trip", raw)
			}
		}
	})
}
