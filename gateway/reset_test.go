package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

// resetData is the data of a reset frame: the state snapshot plus why and
// where the stream resumes.
type resetData struct {
	Reason     string  `json:"reason"`
	Epoch      string  `json:"epoch"`
	ResumeFrom *uint64 `json:"resume_from"`
	WorkflowID string  `json:"workflow_id"`
	Status     string  `json:"status"`
	Outbox     any     `json:"outbox"`
}

// deleteEvents removes stored events by offset. It stands in for expiry
// by MaxAge: the events stream's MaxAge has a one-minute floor, too long
// for a test, and an expired event is, to a reader, exactly a deleted one.
func deleteEvents(t testing.TB, s *stack, offs ...uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	str, err := s.env.Bus.JetStream().Stream(ctx, subjects.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offs {
		if err := str.DeleteMsg(ctx, o); err != nil {
			t.Fatalf("delete event %d: %v", o, err)
		}
	}
}

func TestWSResetOnAVoidCursor(t *testing.T) {
	s := startGateway(t, bustest.New(t))
	bareWorkflow(t, s.env, "wf", "working")
	// Another workflow's events in between: a workflow's offsets have holes
	// that are not expiry.
	var offs []uint64
	for i := range 10 {
		offs = append(offs, mustPublish(t, s.env, "wf", i, false))
		mustPublish(t, s.env, "other", i, false)
	}
	offs = append(offs, mustPublish(t, s.env, "wf", 10, true))
	c0, _, all := s.followWS(t, "/v1/workflows/wf/ws")
	if fmt.Sprint(wsOffsets(all)) != fmt.Sprint(offs) {
		t.Fatalf("offsets %v, want %v", wsOffsets(all), offs)
	}
	ep := c0.Epoch
	at := func(o uint64) string { return strconv.FormatUint(o, 10) }

	// check follows path and wants the given reset reason ("" none) with
	// resume point, then exactly the events want.
	check := func(t *testing.T, path, reason string, resume uint64, want []uint64) {
		t.Helper()
		_, resets, evs := s.followWS(t, path)
		if fmt.Sprint(wsOffsets(evs)) != fmt.Sprint(want) {
			t.Fatalf("offsets %v, want %v", wsOffsets(evs), want)
		}
		if reason == "" {
			if len(resets) != 0 {
				t.Fatalf("unexpected reset %s", resets[0].Data)
			}
			return
		}
		if len(resets) != 1 {
			t.Fatalf("%d reset frames, want 1", len(resets))
		}
		var d resetData
		if err := json.Unmarshal(resets[0].Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Reason != reason || d.Epoch != ep || d.ResumeFrom == nil || *d.ResumeFrom != resume ||
			d.WorkflowID != "wf" || d.Status != "working" || d.Outbox != nil {
			t.Fatalf("reset data %s: want reason %s, epoch %s, resume_from %d, the state without outbox", resets[0].Data, reason, ep, resume)
		}
	}

	t.Run("wrong epoch", func(t *testing.T) {
		check(t, "/v1/workflows/wf/ws?from="+at(offs[3])+"&epoch=not-"+ep, gateway.ResetEpoch, offs[0]-1, offs)
	})
	t.Run("wrong epoch without from", func(t *testing.T) {
		check(t, "/v1/workflows/wf/ws?epoch=old", gateway.ResetEpoch, offs[0]-1, offs)
	})
	t.Run("right epoch", func(t *testing.T) {
		check(t, "/v1/workflows/wf/ws?from="+at(offs[3])+"&epoch="+ep, "", 0, offs[4:])
	})

	// The first six events "expire".
	deleteEvents(t, s, offs[:6]...)
	t.Run("past retention", func(t *testing.T) {
		check(t, "/v1/workflows/wf/ws?from="+at(offs[2])+"&epoch="+ep, gateway.ResetRetention, offs[6]-1, offs[6:])
	})
	// offs[5] is gone and another workflow's event lies between it and the
	// oldest retained one: whether wf lost an event cannot be told, so the
	// cursor is reset rather than trusted.
	t.Run("expired cursor, nothing of wf lost in between", func(t *testing.T) {
		check(t, "/v1/workflows/wf/ws?from="+at(offs[5]), gateway.ResetRetention, offs[6]-1, offs[6:])
	})
	t.Run("resume_from after a reset", func(t *testing.T) {
		check(t, "/v1/workflows/wf/ws?from="+at(offs[6]-1)+"&epoch="+ep, "", 0, offs[6:])
	})
	t.Run("retained offset", func(t *testing.T) {
		check(t, "/v1/workflows/wf/ws?from="+at(offs[7]), "", 0, offs[8:])
	})
	t.Run("no offset starts at the oldest retained", func(t *testing.T) {
		check(t, "/v1/workflows/wf/ws", "", 0, offs[6:])
	})

	t.Run("nothing retained of a finished workflow", func(t *testing.T) {
		bareWorkflow(t, s.env, "gone", "completed")
		var g []uint64
		for i := range 3 {
			g = append(g, mustPublish(t, s.env, "gone", i, i == 2))
		}
		deleteEvents(t, s, g...)
		for _, q := range []string{"?from=" + at(g[0]), "", "?epoch=other"} {
			c, resets, evs := s.followWS(t, "/v1/workflows/gone/ws"+q)
			if len(resets) != 1 || len(evs) != 0 || *c.LastOffset != 0 {
				t.Fatalf("%s: connected %+v, %d resets, events %v: want a reset then a normal close", q, c, len(resets), wsOffsets(evs))
			}
			var d resetData
			if err := json.Unmarshal(resets[0].Data, &d); err != nil || d.Status != "completed" || *d.ResumeFrom != 0 {
				t.Fatalf("%s: reset data %s (%v)", q, resets[0].Data, err)
			}
		}
	})

	// Seven of the streams above began with a reset.
	if n := s.metric(t, `agentbus_gateway_resets_total{kind="ws"}`); n != 7 {
		t.Errorf("resets_total{kind=\"ws\"} = %v, want 7", n)
	}
	if n := s.metric(t, `agentbus_gateway_replays_total{kind="ws"}`); n < 5 {
		t.Errorf("replays_total{kind=\"ws\"} = %v, want at least 5", n)
	}
}
