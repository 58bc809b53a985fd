package gateway_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/coder/websocket"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	wsproto "github.com/agentbus/agentbus/gateway/ws"
)

// wsAgent is a test agent built from a function.
type wsAgent struct {
	name string
	fn   func(ctx context.Context, req agents.Request) (json.RawMessage, error)
}

func (a wsAgent) Card() agents.Card {
	return agents.Card{Name: a.name, Version: "1.0.0", Capabilities: []string{a.name}, Description: "test agent " + a.name}
}

func (a wsAgent) Handle(ctx context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
	return a.fn(ctx, req)
}

// wsSession is a WebSocket client that reads in the background, so a test
// can send frames while it waits for others.
type wsSession struct {
	t      testing.TB
	c      *websocket.Conn
	frames chan wsFrame
	done   chan wsStream
	seen   []wsFrame // every frame await or end took
}

func (s *stack) session(t testing.TB, path string, header ...string) *wsSession {
	t.Helper()
	return newSession(t, s.mustDialWS(t, path, header...))
}

// newSession starts reading c in the background.
func newSession(t testing.TB, c *websocket.Conn) *wsSession {
	ws := &wsSession{t: t, c: c, frames: make(chan wsFrame, 1024), done: make(chan wsStream, 1)}
	go func() {
		st, _ := readWS(context.Background(), ws.c, func(f wsFrame) error { ws.frames <- f; return nil })
		close(ws.frames)
		ws.done <- st
	}()
	return ws
}

// send writes one client frame.
func (ws *wsSession) send(frame string) {
	ws.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := ws.c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		ws.t.Fatalf("send %s: %v", frame, err)
	}
}

// await returns the next frame that match accepts, failing the test at the
// deadline or if the stream ends first.
func (ws *wsSession) await(what string, match func(wsFrame) bool) wsFrame {
	ws.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	for {
		select {
		case f, ok := <-ws.frames:
			if !ok {
				ws.t.Fatalf("stream ended before %s: %v", what, (<-ws.done).End)
			}
			ws.seen = append(ws.seen, f)
			if match(f) {
				return f
			}
		case <-ctx.Done():
			ws.t.Fatalf("no %s within %s", what, deadline)
		}
	}
}

// end waits for the stream's close; every frame is then in seen.
func (ws *wsSession) end() wsStream {
	ws.t.Helper()
	for f := range ws.frames {
		ws.seen = append(ws.seen, f)
	}
	return <-ws.done
}

func ofType(typ string) func(wsFrame) bool { return func(f wsFrame) bool { return f.Type == typ } }

func controlResultOf(t testing.TB, f wsFrame) wsproto.ControlResult {
	t.Helper()
	var r wsproto.ControlResult
	if err := json.Unmarshal(f.Data, &r); err != nil {
		t.Fatalf("control_result %s: %v", f.Data, err)
	}
	return r
}

func stepIn(step string, state events.State) func(wsFrame) bool {
	return func(f wsFrame) bool {
		var st events.Status
		return f.Type == "status" && f.StepID == step && json.Unmarshal(f.Data, &st) == nil && st.State == state
	}
}

// decided returns the one control_result and the terminal event of a
// stream that a control frame ended.
func decided(t testing.TB, fs []wsFrame) (wsproto.ControlResult, wsFrame) {
	t.Helper()
	var res []wsproto.ControlResult
	var end []wsFrame
	for _, f := range fs {
		switch {
		case f.Type == wsproto.FrameControlResult:
			res = append(res, controlResultOf(t, f))
		case f.Offset > 0 && terminal(f.Type):
			end = append(end, f)
		}
	}
	if len(res) != 1 || len(end) != 1 {
		t.Fatalf("want one control_result and one terminal event: %s", wsSummary(fs))
	}
	return res[0], end[0]
}

func TestWSCancelAndApproveFrames(t *testing.T) {
	block := wsAgent{"block", func(ctx context.Context, _ agents.Request) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	judge := wsAgent{"judge", func(_ context.Context, req agents.Request) (json.RawMessage, error) { return req.Input, nil }}
	s := startStackWith(t, block, judge)
	approvalPlan := map[string]any{"steps": []map[string]any{
		{"id": "J", "capability": "judge", "input": map[string]any{"confidence": 0.4}, "requires_approval": true},
		{"id": "after", "capability": "echo", "depends_on": []string{"J"}},
	}}

	t.Run("cancel", func(t *testing.T) {
		s.mustSubmit(t, map[string]any{"workflow_id": "wscancel", "plan": plan("A:block")})
		ws := s.session(t, "/v1/workflows/wscancel/ws")
		ws.await("step A working", stepIn("A", events.StateWorking))
		// Nothing awaits a decision: not applied, and said so (on a second
		// subscriber; the first sees only its own answers).
		other := s.session(t, "/v1/workflows/wscancel/ws")
		other.send(`{"type":"approve"}`)
		if r := controlResultOf(t, other.await("control_result", ofType(wsproto.FrameControlResult))); r.Applied || r.Error != "" || r.Message == "" {
			t.Fatalf("approve with nothing awaiting answered %+v, want not applied with a reason", r)
		}
		ws.send(`{"type":"cancel","reason":"enough"}`)
		// The answer and the terminal event come in either order (the
		// orchestrator may publish `cancelled` before it answers), and the
		// answer is never lost to the close.
		if st := ws.end(); st.CloseCode() != websocket.StatusNormalClosure {
			t.Fatalf("closed by %v after %s, want a normal close", st.End, wsSummary(ws.seen))
		}
		res, end := decided(t, ws.seen)
		if !res.Applied || res.WorkflowID != "wscancel" || res.Error != "" || end.Type != "cancelled" {
			t.Fatalf("cancel answered %+v, stream ended with %s %s", res, end.Type, end.Data)
		}
	})

	for _, c := range []struct {
		name, frame, end string
	}{
		{"approve", `{"type":"approve","comment":"looks right"}`, "complete"},
		{"reject", `{"type":"approve","approve":false,"comment":"no","step_id":"J"}`, "error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "ws" + c.name
			s.mustSubmit(t, map[string]any{"workflow_id": id, "plan": approvalPlan})
			ws := s.session(t, "/v1/workflows/"+id+"/ws")
			ws.await("J awaiting a decision", stepIn("J", events.StateInputRequired))
			ws.send(c.frame)
			if st := ws.end(); st.CloseCode() != websocket.StatusNormalClosure {
				t.Fatalf("closed by %v after %s, want a normal close", st.End, wsSummary(ws.seen))
			}
			res, end := decided(t, ws.seen)
			if !res.Applied || res.Error != "" || end.Type != c.end {
				t.Fatalf("%s answered %+v, stream ended with %s %s; want applied and %s", c.frame, res, end.Type, end.Data, c.end)
			}
		})
	}
}

// TestWSMalformedClientFrames: each bad frame is answered with a
// frame_error naming the bad field by JSON pointer; the stream goes on.
func TestWSMalformedClientFrames(t *testing.T) {
	s := startGateway(t, bustest.New(t))
	bareWorkflow(t, s.env, "garbled", "working")
	ws := s.session(t, "/v1/workflows/garbled/ws")
	ws.await("connected", ofType(gateway.FrameConnected))
	for _, c := range []struct{ frame, pointer string }{
		{`not json`, ""},
		{`[1,2]`, ""},
		{`null`, ""},
		{`{}`, "/type"},
		{`{"type": 7}`, "/type"},
		{`{"type": "dance"}`, "/type"},
		{`{"type": "approve", "approve": "yes"}`, "/approve"},
		{`{"type": "cancel", "reason": 3}`, "/reason"},
		{`{"type": "approve", "step_id": "a b"}`, "/step_id"},
		{`{"type": "cancel", "extra": true}`, "/extra"},
	} {
		ws.send(c.frame)
		f := ws.await("frame_error", ofType(wsproto.FrameClientError))
		var e struct {
			Code     string `json:"code"`
			Message  string `json:"message"`
			Problems []struct {
				Pointer string `json:"pointer"`
			} `json:"problems"`
		}
		if err := json.Unmarshal(f.Data, &e); err != nil || e.Code != "invalid_frame" || e.Message == "" || f.Offset != 0 {
			t.Fatalf("%s: frame_error %s (offset %d): %v", c.frame, f.Data, f.Offset, err)
		}
		ptrs := make([]string, len(e.Problems))
		for i, p := range e.Problems {
			ptrs[i] = p.Pointer
		}
		if !slices.Contains(ptrs, c.pointer) {
			t.Errorf("%s: pointers %q, want %q", c.frame, ptrs, c.pointer)
		}
	}
	// A well-formed frame with nobody to answer it: a control_result
	// saying so, not a hang.
	ws.send(`{"type":"cancel"}`)
	if r := controlResultOf(t, ws.await("control_result", ofType(wsproto.FrameControlResult))); r.Applied || r.Error != "unavailable" {
		t.Fatalf("cancel without orchestrator answered %+v", r)
	}
	off := mustPublish(t, s.env, "garbled", 0, true)
	if f := ws.await("the terminal event", ofType("complete")); f.Offset != off {
		t.Fatalf("complete at %d, want %d", f.Offset, off)
	}
	if st := ws.end(); st.CloseCode() != websocket.StatusNormalClosure {
		t.Fatalf("closed by %v, want a normal close", st.End)
	}
}
