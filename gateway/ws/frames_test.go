package ws

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/events"
)

func TestDecodeClientFrame(t *testing.T) {
	no := false
	for _, c := range []struct {
		in      string
		want    clientFrame
		pointer string // "" with wantErr: the frame as a whole
		wantErr bool
	}{
		{in: `{"type":"cancel"}`, want: clientFrame{Type: "cancel"}},
		{in: `{"type":"cancel","reason":"enough"}`, want: clientFrame{Type: "cancel", controlRequest: controlRequest{Reason: "enough"}}},
		{in: `{"type":"approve","approve":false,"comment":"no","step_id":"J"}`,
			want: clientFrame{Type: "approve", controlRequest: controlRequest{Approve: &no, Comment: "no", StepID: "J"}}},
		{in: ``, wantErr: true},
		{in: `"cancel"`, wantErr: true},
		{in: `{"type":"cancel"} trailing`, wantErr: true},
		{in: `{"reason":"x"}`, pointer: "/type", wantErr: true},
		{in: `{"type":null}`, pointer: "/type", wantErr: true},
		{in: `{"type":"resume"}`, pointer: "/type", wantErr: true},
		{in: `{"type":"approve","approve":1}`, pointer: "/approve", wantErr: true},
		{in: `{"type":"cancel","reason":"` + strings.Repeat("r", 5000) + `"}`, pointer: "/reason", wantErr: true},
		{in: `{"type":"cancel","a/b":1}`, pointer: "/a~1b", wantErr: true},
	} {
		t.Run(c.in[:min(len(c.in), 40)], func(t *testing.T) {
			got, probs := decodeClientFrame([]byte(c.in))
			if c.wantErr {
				if probs == nil {
					t.Fatalf("accepted as %+v", got)
				}
				if probs[0].Pointer != c.pointer || probs[0].Message == "" {
					t.Fatalf("problems %+v, want the first at %q with a message", probs, c.pointer)
				}
				return
			}
			if probs != nil {
				t.Fatalf("problems %+v", probs)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(c.want)
			if string(g) != string(w) {
				t.Fatalf("got %s, want %s", g, w)
			}
		})
	}
}

// FuzzDecodeClientFrame: the decoder never panics, accepts only the two
// actions, and every rejection names a JSON pointer that exists in the
// input (or "" for the whole frame), so a client can find its mistake.
func FuzzDecodeClientFrame(f *testing.F) {
	for _, s := range []string{`{"type":"cancel","reason":"x"}`, `{"type":"approve","approve":true,"step_id":"A"}`,
		`{"type":"approve","approve":"yes"}`, `{}`, `[]`, `null`, `{"type":"cancel","x~y":1}`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, probs := decodeClientFrame(b)
		if probs == nil {
			if got.Type != events.ActionCancel && got.Type != events.ActionApprove {
				t.Fatalf("accepted type %q", got.Type)
			}
			return
		}
		var doc any
		valid := json.Unmarshal(b, &doc) == nil
		for _, p := range probs {
			if p.Message == "" {
				t.Fatalf("problem at %q without a message", p.Pointer)
			}
			if p.Pointer != "" && !strings.HasPrefix(p.Pointer, "/") {
				t.Fatalf("pointer %q is not a JSON pointer", p.Pointer)
			}
			if p.Pointer != "" && !valid {
				t.Fatalf("pointer %q into invalid JSON %q", p.Pointer, b)
			}
		}
	})
}
