package gateway

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus"
)

func TestWriteSSEOpening(t *testing.T) {
	cp := map[string]json.RawMessage{"workflow_id": json.RawMessage(`"wf"`), "status": json.RawMessage(`"working"`), "outbox": json.RawMessage(`[1]`)}
	data, err := resetData(cp, ResetRetention, "ep2", 41)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		st   streamStart
		want []string // event:id pairs
	}{
		{"valid cursor", streamStart{Epoch: "ep2", From: 7, After: 7, Last: bus.Record{Offset: 9}}, []string{"connected:"}},
		{"void cursor", streamStart{Epoch: "ep2", From: 7, After: 41, Last: bus.Record{Offset: 50}, Reset: data}, []string{"connected:", "reset:41"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeSSEOpening(rec, c.st, "default", "wf")
			var got []string
			var resetJSON string
			for _, block := range strings.Split(strings.TrimSpace(rec.Body.String()), "\n\n") {
				var ev, id, d string
				for _, line := range strings.Split(block, "\n") {
					k, v, _ := strings.Cut(line, ": ")
					switch k {
					case "event":
						ev = v
					case "id":
						id = v
					case "data":
						d = v
					}
				}
				got = append(got, ev+":"+id)
				if ev == FrameReset {
					resetJSON = d
				}
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Fatalf("frames %v, want %v:\n%s", got, c.want, rec.Body)
			}
			if c.st.Reset == nil {
				return
			}
			var f struct {
				Type string `json:"type"`
				Data struct {
					Reason     string `json:"reason"`
					Epoch      string `json:"epoch"`
					ResumeFrom uint64 `json:"resume_from"`
					Status     string `json:"status"`
					Outbox     any    `json:"outbox"`
				} `json:"data"`
			}
			if err := json.Unmarshal([]byte(resetJSON), &f); err != nil {
				t.Fatal(err)
			}
			if f.Type != FrameReset || f.Data.Reason != ResetRetention || f.Data.Epoch != "ep2" || f.Data.ResumeFrom != 41 || f.Data.Status != "working" || f.Data.Outbox != nil {
				t.Fatalf("reset frame %s", resetJSON)
			}
		})
	}
}

func TestEventsExpired(t *testing.T) {
	old, fresh := json.RawMessage(`"2020-01-02T03:04:05Z"`), json.RawMessage(`"`+time.Now().UTC().Format(time.RFC3339Nano)+`"`)
	for _, c := range []struct {
		name   string
		status string
		at     json.RawMessage
		last   uint64
		want   bool
	}{
		{"finished long ago, nothing retained", `"completed"`, old, 0, true},
		{"finished just now: its terminal event may be on its way", `"failed"`, fresh, 0, false},
		{"an event retained", `"completed"`, old, 5, false},
		{"still running", `"working"`, old, 0, false},
		{"no updated_at", `"completed"`, nil, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cp := map[string]json.RawMessage{"status": json.RawMessage(c.status)}
			if c.at != nil {
				cp["updated_at"] = c.at
			}
			if got := eventsExpired(cp, bus.Record{Offset: c.last}); got != c.want {
				t.Fatalf("eventsExpired = %v, want %v", got, c.want)
			}
		})
	}
}
