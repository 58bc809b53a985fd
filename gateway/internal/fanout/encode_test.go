package fanout

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
)

// TestAppendFrameIsJSONMarshal: the hand-written encoder gives the bytes
// of encoding/json for every field shape.
func TestAppendFrameIsJSONMarshal(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890123000, time.UTC)
	for _, f := range []events.Frame{
		{Offset: 1, Epoch: "e", Type: "progress", WorkflowID: "w", TenantID: "t", Time: at, Data: json.RawMessage(`{"percent":50}`)},
		{Offset: 1 << 60, Epoch: "2b1f-…", Type: "status", WorkflowID: "w-1", TenantID: "default", Time: at.In(time.FixedZone("x", 3600)), StepID: "A", Data: json.RawMessage(`"s"`)},
		{Type: "connected", Epoch: `q"uo\te<&>` + "\x01\u2028", Time: time.Time{}},
		{Type: "complete", Time: at.Truncate(time.Second), Data: json.RawMessage(`null`)},
	} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendFrame(nil, f); string(got) != string(want) {
			t.Errorf("AppendFrame\n got %s\nwant %s", got, want)
		}
	}
}

func BenchmarkAppendFrame(b *testing.B) {
	f := events.Frame{Offset: 123456, Epoch: "6f1c7d2e-3f4b-4c6d-9a0b-1c2d3e4f5a6b", Type: "progress", WorkflowID: "0190f7a2-7c1e-7b3a-9d4e-5f6a7b8c9d0e",
		TenantID: "default", Time: time.Now(), StepID: "A", Data: json.RawMessage(`{"completed_steps":1,"total_steps":4,"percent":25}`)}
	b.Run("AppendFrame", func(b *testing.B) {
		for b.Loop() {
			_ = AppendFrame(make([]byte, 0, 256), f)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(f)
		}
	})
}
