package events_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/schemas"
)

// A custom event gives back its payload byte for byte, as JSON where
// that is exact and as base64 otherwise, and its data passes the schema.
func TestCustomKeepsPayloadBytes(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		asJSON  bool
	}{
		{"number", []byte("42"), true},
		{"object", []byte(`{"ticket":"OPS-12"}`), true},
		{"null", []byte("null"), true},
		{"spaced JSON", []byte(`{"a": 1}`), false},
		{"HTML in JSON", []byte(`"<b>"`), false},
		{"text", []byte("x"), false},
		{"binary", []byte{0xff, 0x00, 0xfe}, false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := events.NewCustom(tt.payload, map[string]string{"k": "v"})
			if got := len(c.Payload) > 0; got != tt.asJSON {
				t.Errorf("held as JSON = %v, want %v", got, tt.asJSON)
			}
			back := roundTrip(t, c, tt.payload)
			if back.Metadata["k"] != "v" {
				t.Errorf("metadata = %v", back.Metadata)
			}
		})
	}
}

func FuzzCustomKeepsPayloadBytes(f *testing.F) {
	for _, s := range []string{"", "0", "x", `{"a":1}`, `{"a": 1}`, `"\u2028"`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) { roundTrip(t, events.NewCustom(payload, nil), payload) })
}

// roundTrip encodes c as event data, checks it against the schema,
// decodes it and checks that its bytes are payload.
func roundTrip(t *testing.T, c events.Custom, payload []byte) events.Custom {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(events.TypeCustom.Schema(), data); err != nil {
		t.Fatalf("schema: %v (data %s)", err, data)
	}
	var back events.Custom
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Bytes(), payload) {
		t.Fatalf("Bytes() = %q, want %q (data %s)", back.Bytes(), payload, data)
	}
	return back
}
