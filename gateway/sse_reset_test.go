package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
)

// TestSSEResetOnAVoidCursor: an SSE stream whose cursor is void (another
// epoch, or an offset past retention) gets `connected`, then a `reset`
// frame whose id is the resume point — so that an EventSource's
// Last-Event-ID continues from there — then exactly the retained events.
func TestSSEResetOnAVoidCursor(t *testing.T) {
	s := startGateway(t, bustest.New(t))
	bareWorkflow(t, s.env, "wf", "working")
	var offs []uint64
	for i := range 6 {
		offs = append(offs, mustPublish(t, s.env, "wf", i, false))
	}
	offs = append(offs, mustPublish(t, s.env, "wf", 6, true))
	c0, _ := s.mustFollow(t, "/v1/workflows/wf/events")
	at := func(o uint64) string { return strconv.FormatUint(o, 10) }

	check := func(t *testing.T, path, reason string, resume uint64, want []uint64, header ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		st, err := s.readSSE(ctx, path, nil, header...)
		if err != nil || st.Status != http.StatusOK {
			t.Fatalf("GET %s: status %d, %v", path, st.Status, err)
		}
		fs := st.Frames
		if len(fs) < 2 || fs[0].Event != gateway.FrameConnected {
			t.Fatalf("GET %s: frames %s, want connected first", path, summary(fs))
		}
		rest := fs[1:]
		if reason != "" {
			if rest[0].Event != gateway.FrameReset || rest[0].ID != at(resume) {
				t.Fatalf("GET %s: frame after connected is %s id %q, want reset with id %d", path, rest[0].Event, rest[0].ID, resume)
			}
			var f struct {
				Data resetData `json:"data"`
			}
			if err := json.Unmarshal([]byte(rest[0].Data), &f); err != nil || f.Data.Reason != reason ||
				f.Data.ResumeFrom == nil || *f.Data.ResumeFrom != resume || f.Data.Status != "working" {
				t.Fatalf("GET %s: reset data %s (%v), want reason %s resume_from %d", path, rest[0].Data, err, reason, resume)
			}
			rest = rest[1:]
		}
		var got []uint64
		for _, f := range rest {
			if f.Event == gateway.FrameReset {
				t.Fatalf("GET %s: a second reset", path)
			}
			n, err := strconv.ParseUint(f.ID, 10, 64)
			if err != nil {
				t.Fatalf("GET %s: event %s without an offset id", path, f.Event)
			}
			got = append(got, n)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("GET %s: offsets %v, want %v", path, got, want)
		}
	}

	t.Run("wrong epoch", func(t *testing.T) {
		check(t, "/v1/workflows/wf/events?from="+at(offs[2])+"&epoch=old", gateway.ResetEpoch, offs[0]-1, offs)
	})
	t.Run("right epoch", func(t *testing.T) {
		check(t, "/v1/workflows/wf/events?from="+at(offs[2])+"&epoch="+c0.Epoch, "", 0, offs[3:])
	})
	deleteEvents(t, s, offs[:3]...)
	t.Run("Last-Event-ID past retention", func(t *testing.T) {
		check(t, "/v1/workflows/wf/events", gateway.ResetRetention, offs[3]-1, offs[3:], "Last-Event-ID", at(offs[1]))
	})
	t.Run("resume from the reset's id", func(t *testing.T) {
		check(t, "/v1/workflows/wf/events", "", 0, offs[3:], "Last-Event-ID", at(offs[3]-1))
	})
	if n := s.metric(t, `agentbus_gateway_resets_total{kind="sse"}`); n != 2 {
		t.Errorf(`resets_total{kind="sse"} = %v, want 2`, n)
	}
}
