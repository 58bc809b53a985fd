package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/subjects"
)

// wsFrame is one server frame as a WebSocket client decodes it.
type wsFrame struct {
	Offset     uint64          `json:"offset"`
	Epoch      string          `json:"epoch"`
	Type       string          `json:"type"`
	WorkflowID string          `json:"workflow_id"`
	TenantID   string          `json:"tenant_id"`
	Time       time.Time       `json:"time"`
	StepID     string          `json:"step_id"`
	Data       json.RawMessage `json:"data"`
}

// wsStream is what one WebSocket connection yielded.
type wsStream struct {
	Frames []wsFrame
	// End is the error that ended reading: a websocket.CloseError when the
	// server closed with a close frame.
	End error
}

// CloseCode is the server's close code, -1 if it sent none.
func (w wsStream) CloseCode() websocket.StatusCode { return websocket.CloseStatus(w.End) }

// dialWS opens a WebSocket to path ("/v1/workflows/x/ws?from=3"). On a
// refused upgrade the error's answer is in the returned response.
func (s *stack) dialWS(ctx context.Context, path string, header ...string) (*websocket.Conn, *http.Response, error) {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return s.dialWSWith(ctx, path, &websocket.DialOptions{HTTPHeader: h})
}

// dialWSWith is dialWS with the client's options.
func (s *stack) dialWSWith(ctx context.Context, path string, opts *websocket.DialOptions) (*websocket.Conn, *http.Response, error) {
	opts.HTTPClient = s.client
	u := "ws" + strings.TrimPrefix(s.base, "http") + path
	c, resp, err := websocket.Dial(ctx, u, opts)
	if err != nil {
		return nil, resp, err
	}
	c.SetReadLimit(8 << 20)
	return c, resp, nil
}

func (s *stack) mustDialWS(t testing.TB, path string, header ...string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	c, _, err := s.dialWS(ctx, path, header...)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// readWS reads frames until the connection ends or onFrame returns
// errStopReading (or another error, returned).
func readWS(ctx context.Context, c *websocket.Conn, onFrame func(wsFrame) error) (wsStream, error) {
	var out wsStream
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			out.End = err
			return out, nil
		}
		var f wsFrame
		if err := json.Unmarshal(b, &f); err != nil {
			return out, fmt.Errorf("frame %q: %w", b, err)
		}
		out.Frames = append(out.Frames, f)
		if onFrame != nil {
			if err := onFrame(f); errors.Is(err, errStopReading) {
				return out, nil
			} else if err != nil {
				return out, err
			}
		}
	}
}

// followWS reads a whole stream within the deadline and checks its
// framing (see checkWS) and its normal close.
func (s *stack) followWS(t testing.TB, path string, header ...string) (connected, []wsFrame, []wsFrame) {
	t.Helper()
	c := s.mustDialWS(t, path, header...)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	st, err := readWS(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.CloseCode() != websocket.StatusNormalClosure {
		t.Fatalf("%s: stream ended by %v after %s, want a normal close", path, st.End, wsSummary(st.Frames))
	}
	conn, resets, evs, err := checkWS(st.Frames)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return conn, resets, evs
}

// checkWS checks a stream's framing: `connected` first (offset 0), then
// optional `reset` frames, then event frames with strictly increasing
// offsets in the connected epoch and workflow. It returns the connected
// data, the resets and the events.
func checkWS(fs []wsFrame) (connected, []wsFrame, []wsFrame, error) {
	var c connected
	if len(fs) == 0 || fs[0].Type != gateway.FrameConnected || fs[0].Offset != 0 {
		return c, nil, nil, fmt.Errorf("first frame is not a connected frame with offset 0: %s", wsSummary(fs))
	}
	if err := json.Unmarshal(fs[0].Data, &c); err != nil || c.Epoch == "" || c.From == nil || c.LastOffset == nil {
		return c, nil, nil, fmt.Errorf("connected data %s lacks epoch, from or last_offset (%v)", fs[0].Data, err)
	}
	if fs[0].Epoch != c.Epoch || fs[0].WorkflowID != c.WorkflowID {
		return c, nil, nil, fmt.Errorf("connected frame %+v disagrees with its data %s", fs[0], fs[0].Data)
	}
	var resets, evs []wsFrame
	var prev uint64
	for _, f := range fs[1:] {
		if f.Epoch != c.Epoch || f.WorkflowID != c.WorkflowID {
			return c, resets, evs, fmt.Errorf("frame %d %s: epoch %q workflow %q, connected says %q %q", f.Offset, f.Type, f.Epoch, f.WorkflowID, c.Epoch, c.WorkflowID)
		}
		if f.Type == gateway.FrameReset {
			if len(evs) > 0 || f.Offset != 0 {
				return c, resets, evs, fmt.Errorf("reset frame after events or with an offset: %s", wsSummary(fs))
			}
			resets = append(resets, f)
			continue
		}
		if f.Offset <= prev {
			return c, resets, evs, fmt.Errorf("offset %d after %d: %s", f.Offset, prev, wsSummary(fs))
		}
		prev = f.Offset
		evs = append(evs, f)
	}
	return c, resets, evs, nil
}

// metric reads one sample of the gateway's /metrics, e.g.
// `agentbus_gateway_resets_total{kind="ws"}`; 0 if absent.
func (s *stack) metric(t testing.TB, sample string) float64 {
	t.Helper()
	r := s.mustDo(t, http.MethodGet, "/metrics", nil)
	for _, line := range strings.Split(string(r.Body), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %q", sample, line)
			}
			return f
		}
	}
	return 0
}

func wsSummary(fs []wsFrame) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = strconv.FormatUint(f.Offset, 10) + ":" + f.Type
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func wsOffsets(fs []wsFrame) []uint64 {
	out := make([]uint64, len(fs))
	for i, f := range fs {
		out[i] = f.Offset
	}
	return out
}

// bareWorkflow stores a checkpoint for id with status, with no
// orchestrator behind it: the test publishes the workflow's events itself.
func bareWorkflow(t testing.TB, env *bustest.Env, id, status string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	key, err := subjects.CheckpointKey(gateway.DefaultTenant, id)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := env.Bus.KV(ctx, subjects.BucketCheckpoints)
	if err != nil {
		t.Fatal(err)
	}
	cp := fmt.Sprintf(`{"tenant_id":"default","workflow_id":%q,"status":%q,"updated_at":"2020-01-02T03:04:05Z","outbox":[{"x":1}]}`, id, status)
	if _, err := kv.Put(ctx, key, []byte(cp)); err != nil {
		t.Fatal(err)
	}
}

// publishEvent stores the n-th event of workflow id: a progress event, or
// the terminal complete when final. It returns the event's offset.
func publishEvent(ctx context.Context, env *bustest.Env, id string, n int, final bool, pad int) (uint64, error) {
	subj, err := subjects.Events(gateway.DefaultTenant, id)
	if err != nil {
		return 0, err
	}
	msgID := events.EventKey(gateway.DefaultTenant, id, n)
	var env1 events.Envelope
	if final {
		env1, err = events.New(events.TypeComplete, msgID, events.SourceOrchestrator, gateway.DefaultTenant, id, "",
			events.Complete{Result: json.RawMessage(`"done"`), Outputs: map[string]json.RawMessage{}})
	} else {
		env1, err = events.New(events.TypeProgress, msgID, events.SourceOrchestrator, gateway.DefaultTenant, id, "",
			events.Progress{CompletedSteps: n, TotalSteps: n + 1, Message: strings.Repeat("x", pad)})
	}
	if err != nil {
		return 0, err
	}
	p, err := env.Bus.Publish(ctx, subj, env1, msgID)
	return p.Sequence, err
}

func mustPublish(t testing.TB, env *bustest.Env, id string, n int, final bool) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	off, err := publishEvent(ctx, env, id, n, final, 0)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

func TestWSDiamondStreamsToTheEnd(t *testing.T) {
	s := startStack(t)
	sub := s.mustSubmit(t, map[string]any{"query": "diamond", "plan": plan("A:echo", "B:echo:A", "C:echo:A", "D:echo:B,C")})
	wsPath := "/v1/workflows/" + sub.WorkflowID + "/ws"
	c, resets, fs := s.followWS(t, wsPath)
	if len(resets) != 0 || *c.From != 0 || c.WorkflowID != sub.WorkflowID {
		t.Fatalf("connected %+v, resets %d: want workflow %s from 0, no reset", c, len(resets), sub.WorkflowID)
	}
	if len(fs) < 5 || fs[len(fs)-1].Type != "complete" {
		t.Fatalf("stream %s does not end with complete", wsSummary(fs))
	}
	for _, f := range fs {
		if f.TenantID != gateway.DefaultTenant || f.WorkflowID != sub.WorkflowID || f.Time.IsZero() {
			t.Fatalf("frame %d: tenant %q workflow %q time %v", f.Offset, f.TenantID, f.WorkflowID, f.Time)
		}
	}
	// The same events, in the same order, as over SSE.
	_, sse := s.mustFollow(t, sub.EventsURL)
	if len(sse) != len(fs) {
		t.Fatalf("ws offsets %v, sse %v", wsOffsets(fs), offsets(sse))
	}
	for i := range fs {
		if fs[i].Offset != sse[i].Offset || fs[i].Type != sse[i].Type || string(fs[i].Data) != string(sse[i].Data) {
			t.Fatalf("frame %d: ws %d %s %s, sse %d %s %s", i, fs[i].Offset, fs[i].Type, fs[i].Data, sse[i].Offset, sse[i].Type, sse[i].Data)
		}
	}

	// Resume in the middle, and at the terminal event: connected, then a
	// normal close.
	mid := fs[2].Offset
	_, _, rest := s.followWS(t, wsPath+"?from="+strconv.FormatUint(mid, 10)+"&epoch="+c.Epoch)
	if fmt.Sprint(wsOffsets(rest)) != fmt.Sprint(wsOffsets(fs[3:])) {
		t.Fatalf("from %d: offsets %v, want %v", mid, wsOffsets(rest), wsOffsets(fs[3:]))
	}
	last := fs[len(fs)-1].Offset
	c2, _, none := s.followWS(t, wsPath+"?from="+strconv.FormatUint(last, 10))
	if len(none) != 0 || *c2.From != last || *c2.LastOffset != last {
		t.Fatalf("resume at the terminal event: connected %+v, frames %s", c2, wsSummary(none))
	}
}

func TestWSRefusesBeforeUpgrading(t *testing.T) {
	s := startGateway(t, bustest.New(t))
	bareWorkflow(t, s.env, "known", "working")
	for _, c := range []struct {
		name   string
		path   string
		header []string
		status int
		code   string
	}{
		{"unknown workflow", "/v1/workflows/nope/ws", nil, http.StatusNotFound, "not_found"},
		{"invalid workflow id", "/v1/workflows/No.Pe/ws", nil, http.StatusNotFound, "not_found"},
		{"from=abc", "/v1/workflows/known/ws?from=abc", nil, http.StatusBadRequest, "invalid_request"},
		{"from=-1", "/v1/workflows/known/ws?from=-1", nil, http.StatusBadRequest, "invalid_request"},
		{"epoch too long", "/v1/workflows/known/ws?epoch=" + strings.Repeat("e", 300), nil, http.StatusBadRequest, "invalid_request"},
		{"bad tenant", "/v1/workflows/known/ws", []string{gateway.TenantHeader, "Bad.Tenant"}, http.StatusBadRequest, ""},
		{"other tenant", "/v1/workflows/known/ws", []string{gateway.TenantHeader, "other"}, http.StatusNotFound, "not_found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			conn, resp, err := s.dialWS(ctx, c.path, c.header...)
			if err == nil {
				_ = conn.CloseNow()
				t.Fatalf("upgraded; want %d", c.status)
			}
			if resp == nil || resp.StatusCode != c.status {
				t.Fatalf("answer %v (%v), want status %d", resp, err, c.status)
			}
			if c.code == "" {
				return
			}
			r := s.mustDo(t, http.MethodGet, c.path, nil, c.header...)
			wantError(t, "GET "+c.path, r, c.status, c.code)
		})
	}
}
