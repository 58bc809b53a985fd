package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
	wsproto "github.com/agentbus/agentbus/gateway/ws"
)

// logSignal is a slog handler that closes a channel the first time a
// record with a given message is logged: how a test learns that the
// gateway decided something, without sleeping.
type logSignal struct {
	msg  string
	once *sync.Once
	ch   chan struct{}
}

func newLogSignal(msg string) logSignal {
	return logSignal{msg: msg, once: new(sync.Once), ch: make(chan struct{})}
}

func (l logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (l logSignal) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l logSignal) WithGroup(string) slog.Handler            { return l }
func (l logSignal) Handle(_ context.Context, r slog.Record) error {
	if r.Message == l.msg {
		l.once.Do(func() { close(l.ch) })
	}
	return nil
}

func (l logSignal) wait(t testing.TB) {
	t.Helper()
	select {
	case <-l.ch:
	case <-time.After(deadline):
		t.Fatalf("no log %q within %s", l.msg, deadline)
	}
}

// TestWSSlowClientIsClosed: a client that stops reading is closed with
// CloseSlowConsumer once it is SendQueueBytes behind, having received a
// contiguous prefix of the stream; it resumes from its last offset and
// gets the rest. A fast client on the same workflow is unaffected.
func TestWSSlowClientIsClosed(t *testing.T) {
	slow := newLogSignal("slow consumer closed")
	s := startGateway(t, bustest.New(t), func(c *gateway.Config) {
		c.WS.SendQueueBytes = 256 << 10
		c.Logger = slog.New(slow)
	})
	bareWorkflow(t, s.env, "firehose", "working")
	path := "/v1/workflows/firehose/ws"

	// The slow client reads its connected frame, then nothing: its socket
	// buffer stays small (Linux grows it only as the reader reads).
	sc := s.mustDialWS(t, path)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, b, err := sc.Read(ctx); err != nil {
		t.Fatalf("slow client: %v", err)
	} else if len(b) == 0 {
		t.Fatal("slow client: empty connected frame")
	}

	type result struct {
		st  wsStream
		err error
	}
	fastDone := make(chan result, 1)
	fastGot := make(chan uint64, 1024)
	fc := s.mustDialWS(t, path)
	go func() {
		st, err := readWS(ctx, fc, func(f wsFrame) error { fastGot <- f.Offset; return nil })
		fastDone <- result{st, err}
	}()

	// 10 MB of events: more than the server's socket buffer (tcp_wmem
	// allows 4 MiB) plus the 256 KiB queue. They are published in batches
	// of 128 KiB, each once the fast client has the previous one: it keeps
	// up by definition, whatever the machine's speed, while the slow one
	// falls behind.
	const n, pad, batch = 640, 16 << 10, 8
	var offs []uint64
	for i := range n {
		o, err := publishEvent(ctx, s.env, "firehose", i, i == n-1, pad)
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, o)
		if (i+1)%batch != 0 {
			continue
		}
		for got := uint64(0); got != o; {
			select {
			case got = <-fastGot:
			case <-ctx.Done():
				t.Fatalf("the fast client did not get event %d: %v", o, ctx.Err())
			}
		}
	}

	fast := <-fastDone
	if fast.err != nil {
		t.Fatal(fast.err)
	}
	_, _, fevs, err := checkWS(fast.st.Frames)
	if err != nil || fast.st.CloseCode() != websocket.StatusNormalClosure || fmt.Sprint(wsOffsets(fevs)) != fmt.Sprint(offs) {
		t.Fatalf("fast client: %d events (%v), closed by %v; want all %d and a normal close", len(fevs), err, fast.st.End, n)
	}

	// Now that the gateway gave up on it, the slow client reads what was
	// already on its way, then the close frame.
	slow.wait(t)
	st, err := readWS(ctx, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.CloseCode() != wsproto.CloseSlowConsumer {
		t.Fatalf("slow client ended by %v after %d frames, want close code %d", st.End, len(st.Frames), wsproto.CloseSlowConsumer)
	}
	got := wsOffsets(st.Frames)
	if len(got) == 0 || len(got) >= n || fmt.Sprint(got) != fmt.Sprint(offs[:len(got)]) {
		t.Fatalf("slow client got offsets %v…, want a proper prefix of the stream", got[:min(len(got), 5)])
	}
	if n := s.metric(t, `agentbus_gateway_slow_client_closes_total{kind="ws"}`); n != 1 {
		t.Errorf("slow_client_closes_total{kind=\"ws\"} = %v, want 1", n)
	}
	// Resume from the last offset received: the rest, no gap.
	_, _, rest := s.followWS(t, fmt.Sprintf("%s?from=%d", path, got[len(got)-1]))
	if fmt.Sprint(append(got, wsOffsets(rest)...)) != fmt.Sprint(offs) {
		t.Fatalf("after resuming: %d + %d events, want %d contiguous", len(got), len(rest), n)
	}
	// Every event frame written counts: the fast client's, the slow one's
	// and the resumed stream's.
	if sent, want := s.metric(t, `agentbus_gateway_frames_sent_total{kind="ws"}`), float64(2*n); sent != want {
		t.Errorf("frames_sent_total{kind=\"ws\"} = %v, want %v", sent, want)
	}
}

// TestWSIdleTimeout: a client that answers pings stays connected through
// many idle timeouts; one that stops reading (no pongs) is closed.
func TestWSIdleTimeout(t *testing.T) {
	idle := newLogSignal("websocket idle timeout")
	s := startGateway(t, bustest.New(t), func(c *gateway.Config) {
		c.WS.PingInterval = 100 * time.Millisecond
		c.WS.IdleTimeout = time.Second
		c.Logger = slog.New(idle)
	})
	bareWorkflow(t, s.env, "quiet", "working")
	alive := s.mustDialWS(t, "/v1/workflows/quiet/ws")
	mute := s.mustDialWS(t, "/v1/workflows/quiet/ws")

	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	aliveDone := make(chan wsStream, 1)
	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	go func() { st, _ := readWS(actx, alive, nil); aliveDone <- st }()

	idle.wait(t) // the mute client, which never read its pings
	st, err := readWS(ctx, mute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.CloseCode() != websocket.StatusPolicyViolation {
		t.Fatalf("mute client ended by %v, want %d", st.End, websocket.StatusPolicyViolation)
	}
	// Both connected at the same moment; the reading one is still open
	// well past its idle timeout.
	select {
	case a := <-aliveDone:
		t.Fatalf("the client that answers pings was closed: %v", a.End)
	case <-time.After(1500 * time.Millisecond):
	}
	acancel()
	if a := <-aliveDone; !errors.Is(a.End, context.Canceled) {
		t.Fatalf("alive client ended by %v, want its own cancel", a.End)
	}
}
