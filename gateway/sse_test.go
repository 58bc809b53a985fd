package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents/echo"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

func TestDiamondStreamsToTheEnd(t *testing.T) {
	s := startStack(t)
	sub := s.mustSubmit(t, map[string]any{"query": "diamond", "plan": plan("A:echo", "B:echo:A", "C:echo:A", "D:echo:B,C")})
	// follow checks the framing: connected first, id = offset, strictly
	// increasing, a terminal frame last, then the server closes the stream.
	c, fs := s.mustFollow(t, sub.EventsURL)
	if c.WorkflowID != sub.WorkflowID || *c.From != 0 {
		t.Errorf("connected %+v, want workflow %s from 0", c, sub.WorkflowID)
	}
	end := fs[len(fs)-1]
	if end.Type != "complete" {
		t.Fatalf("stream ended with %s %s", end.Type, end.Data)
	}
	for _, f := range fs {
		if f.TenantID != gateway.DefaultTenant || f.WorkflowID != sub.WorkflowID {
			t.Fatalf("frame %d belongs to %s/%s", f.Offset, f.TenantID, f.WorkflowID)
		}
	}

	// Each step completes after its dependencies.
	done := map[string]int{}
	for i, f := range fs {
		var st events.Status
		if f.Type == "status" && json.Unmarshal(f.Data, &st) == nil && st.StepID != "" && st.State == events.StateCompleted {
			done[st.StepID] = i
		}
	}
	for _, e := range [][2]string{{"A", "B"}, {"A", "C"}, {"B", "D"}, {"C", "D"}} {
		a, okA := done[e[0]]
		b, okB := done[e[1]]
		if !okA || !okB || a >= b {
			t.Errorf("step %s must complete before %s: positions %v", e[0], e[1], done)
		}
	}
	var complete events.Complete
	if err := json.Unmarshal(end.Data, &complete); err != nil {
		t.Fatal(err)
	}
	var d echo.Output
	if err := json.Unmarshal(complete.Result, &d); err != nil || d.StepID != "D" || len(d.DependencyOutputs) != 2 {
		t.Fatalf("result is not D's output with B's and C's (%v): %s", err, complete.Result)
	}
	if len(complete.Outputs) != 4 {
		t.Errorf("complete carries %d outputs, want 4", len(complete.Outputs))
	}
}

func TestReplayFromAnOffset(t *testing.T) {
	s := startStack(t)
	sub := s.mustSubmit(t, map[string]any{"plan": plan("A:echo", "B:echo:A", "C:echo:A", "D:echo:B,C")})
	c0, all := s.mustFollow(t, sub.EventsURL)
	if len(all) < 5 {
		t.Fatalf("only %d frames", len(all))
	}
	last := all[len(all)-1].Offset
	n := all[2].Offset
	N := strconv.FormatUint(n, 10)

	cases := []struct {
		name   string
		path   string
		header []string
		from   uint64
		want   []frame
	}{
		{"no cursor", sub.EventsURL, nil, 0, all},
		{"from=0", sub.EventsURL + "?from=0", nil, 0, all},
		{"from=N", sub.EventsURL + "?from=" + N, nil, n, all[3:]},
		{"Last-Event-ID: N", sub.EventsURL, []string{"Last-Event-ID", N}, n, all[3:]},
		// A browser's EventSource reconnects to the URL it was opened
		// with: the header is newer than the URL.
		{"Last-Event-ID wins over from", sub.EventsURL + "?from=0", []string{"Last-Event-ID", N}, n, all[3:]},
		{"Last-Event-ID wins over a later from", sub.EventsURL + "?from=" + strconv.FormatUint(last, 10), []string{"Last-Event-ID", N}, n, all[3:]},
		{"from=N-1 (exclusive)", sub.EventsURL + "?from=" + strconv.FormatUint(all[1].Offset, 10), nil, all[1].Offset, all[2:]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, got := s.mustFollow(t, c.path, c.header...)
			if *conn.From != c.from || *conn.LastOffset != last || conn.Epoch != c0.Epoch {
				t.Errorf("connected from %d last_offset %d epoch %s, want %d %d %s", *conn.From, *conn.LastOffset, conn.Epoch, c.from, last, c0.Epoch)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d frames, want %d (offsets %v, want %v)", len(got), len(c.want), offsets(got), offsets(c.want))
			}
			for i := range got {
				if got[i].Offset != c.want[i].Offset || got[i].Type != c.want[i].Type || string(got[i].Data) != string(c.want[i].Data) {
					t.Fatalf("frame %d: %d %s %s, want %d %s %s", i, got[i].Offset, got[i].Type, got[i].Data, c.want[i].Offset, c.want[i].Type, c.want[i].Data)
				}
			}
		})
	}

	for _, bad := range []struct {
		name   string
		path   string
		header []string
	}{
		{"from=abc", sub.EventsURL + "?from=abc", nil},
		{"from=-1", sub.EventsURL + "?from=-1", nil},
		{"Last-Event-ID: abc", sub.EventsURL, []string{"Last-Event-ID", "abc"}},
		{"from=abc on an unknown workflow", "/v1/workflows/nope/events?from=abc", nil},
	} {
		t.Run(bad.name, func(t *testing.T) {
			r := s.mustDo(t, http.MethodGet, bad.path, nil, bad.header...)
			wantError(t, "GET "+bad.path, r, http.StatusBadRequest, "invalid_request")
		})
	}
}

// TestResumeAfterTheTerminalEventEnds covers a client that saw the whole
// stream and reconnects with its last id, as a browser EventSource does by
// itself when the server closes the stream. Nothing more will ever come, so
// the gateway must not hold that request open (with keepalives) forever.
func TestResumeAfterTheTerminalEventEnds(t *testing.T) {
	s := startStack(t, func(c *gateway.Config) { c.KeepAlive = time.Second })
	sub := s.mustSubmit(t, map[string]any{"query": "done soon"})
	_, all := s.mustFollow(t, sub.EventsURL)
	last := strconv.FormatUint(all[len(all)-1].Offset, 10)

	// However the cursor arrives — the header, the URL, or the header on
	// the URL an EventSource was opened with — at or after the terminal
	// event the answer is 204, which stops an EventSource for good.
	for _, c := range []struct {
		query string
		h     []string
	}{{"", []string{"Last-Event-ID", last}}, {"?from=" + last, nil}, {"?from=0", []string{"Last-Event-ID", last}}} {
		path, h := sub.EventsURL+c.query, c.h
		// Three keepalive intervals are ample for a request that has nothing to wait for.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		st, err := s.readSSE(ctx, path, nil, h...)
		cancel()
		if err != nil {
			t.Errorf("GET %s %v after the terminal event: the stream stays open (%d frames, %d keepalives): %v; "+
				"want a prompt end (e.g. 204, which also stops EventSource reconnecting, or `connected` then close)",
				path, h, len(st.Frames), len(st.Comments), err)
			continue
		}
		if st.Status != http.StatusNoContent {
			t.Errorf("GET %s %v: status %d, want 204: %s", path, h, st.Status, st.Body)
		}
		for _, f := range st.Frames[min(1, len(st.Frames)):] {
			t.Errorf("GET %s %v: unexpected frame %s %s after the terminal offset", path, h, f.Event, f.ID)
		}
	}
}

// TestLiveStreamKeepsAliveAndDeliversNewEvents follows a workflow with no
// events yet: the stream sends keepalive comments while idle, then delivers
// an event published after the client connected and ends on it.
func TestLiveStreamKeepsAliveAndDeliversNewEvents(t *testing.T) {
	s := startStack(t, func(c *gateway.Config) { c.KeepAlive = time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	// A checkpoint the gateway can find, with no orchestrator behind it.
	key, err := subjects.CheckpointKey(gateway.DefaultTenant, "idle")
	if err != nil {
		t.Fatal(err)
	}
	kv, err := s.env.Bus.KV(ctx, subjects.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, key, []byte(`{"tenant_id":"default","workflow_id":"idle","status":"working"}`)); err != nil {
		t.Fatal(err)
	}

	published := false
	st, err := s.readSSE(ctx, "/v1/workflows/idle/events", func(f sseFrame, comments []string) error {
		if published || len(comments) == 0 {
			return nil
		}
		if comments[0] != "keepalive" {
			t.Errorf("comment %q, want keepalive", comments[0])
		}
		published = true
		subj, err := subjects.Events(gateway.DefaultTenant, "idle")
		if err != nil {
			return err
		}
		msgID := events.EventKey(gateway.DefaultTenant, "idle", 0)
		env, err := events.New(events.TypeComplete, msgID, events.SourceOrchestrator, gateway.DefaultTenant, "idle", "",
			events.Complete{Result: json.RawMessage(`"late"`), Outputs: map[string]json.RawMessage{}})
		if err != nil {
			return err
		}
		_, err = s.env.Bus.Publish(ctx, subj, env, msgID)
		return err
	})
	if err != nil {
		t.Fatalf("stream (%d frames, comments %q): %v", len(st.Frames), st.Comments, err)
	}
	if !published {
		t.Fatalf("no keepalive before the stream ended: frames %s", summary(st.Frames))
	}
	c, fs, err := checkStream(st.Frames)
	if err != nil {
		t.Fatal(err)
	}
	var got events.Complete
	if *c.LastOffset != 0 || len(fs) != 1 || fs[0].Type != "complete" || json.Unmarshal(fs[0].Data, &got) != nil || string(got.Result) != `"late"` {
		t.Fatalf("connected last_offset %d, frames %+v: want last_offset 0 and the one late complete frame", *c.LastOffset, fs)
	}
}

func offsets(fs []frame) []uint64 {
	out := make([]uint64, len(fs))
	for i, f := range fs {
		out[i] = f.Offset
	}
	return out
}
