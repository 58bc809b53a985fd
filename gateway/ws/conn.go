package ws

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway/internal/fanout"
)

// wsConn is one WebSocket subscriber. Goroutines share it: the handler's
// (serve: writes frames, pings, decides the close), the reader (client
// frames) and, while the subscriber replays, the feeder (feed: the
// workflow's events from the subscriber's own ordered consumer, until it
// joins the workflow's hub, which then queues them). The feeder, the hub
// and the reader only queue frames; the handler alone writes.
type wsConn struct {
	s                       *Server
	c                       *websocket.Conn
	cork                    *corkConn
	tenant, workflow, epoch string
	q                       *fanout.Queue
	sub                     *fanout.Subscriber
	// refusal, when not nil, refuses every control frame with its answer
	// for the frame's action: a viewer's token, a page on another origin.
	refusal func(action string) string
	// sent counts event frames written (frames_sent_total{kind="ws"}).
	sent prometheus.Counter
	last atomic.Int64 // UnixNano of the last pong or client frame
	busy atomic.Bool  // a control request is in flight
}

func newWSConn(s *Server, c *websocket.Conn, cork *corkConn, tenant, workflow, epoch string, refusal func(action string) string) *wsConn {
	q := fanout.NewQueue(s.cfg.SendQueueBytes, fanout.KindWS)
	return &wsConn{s: s, c: c, cork: cork, tenant: tenant, workflow: workflow, epoch: epoch, refusal: refusal,
		q: q, sent: s.metrics.FramesSent}
}

func (wc *wsConn) touch() { wc.last.Store(time.Now().UnixNano()) }

// serve runs the connection until it closes; every goroutine it started has
// ended when it returns.
func (wc *wsConn) serve(ctx context.Context, st Start) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var f *fanout.Feeder
	defer func() {
		cancel()
		_ = wc.c.CloseNow()
		wg.Wait()
		if f != nil {
			f.Stop()
		}
	}()
	wc.touch()
	if st.Reset {
		wc.s.metrics.Resets.Inc()
	}
	if st.Replay {
		wc.s.metrics.Replays.Inc()
	}
	opening := st.Opening
	for i, f := range opening {
		_ = wc.send(ctx, f, st.Done && i == len(opening)-1, true)
	}
	wc.sub = fanout.NewSubscriber(wc.q, st.After)
	var fed <-chan struct{} // nil: nothing follows the opening frames
	if !st.Done {
		f = wc.s.hubs.StartFeed(ctx, wc.sub, wc.tenant, wc.workflow, wc.epoch, st.Live)
		fed = f.Done()
	}
	// The reader's context outlives ctx: a Read whose context ends drops
	// the connection at once (coder/websocket), which would race the 1001
	// close that a shutting-down gateway owes its clients. It ends when
	// serve returns, after the close handshake.
	rctx, stopRead := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRead()
	readDone := make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); readDone <- wc.read(rctx) }()

	code, reason := wc.pump(ctx, f, fed, readDone, &wg)
	if code < 0 {
		return // the client is gone; CloseNow above
	}
	if code == websocket.StatusPolicyViolation {
		wc.s.log.Info("websocket idle timeout", "tenant", wc.tenant, "workflow", wc.workflow)
	}
	_ = wc.c.Close(code, reason)
}

// pump writes queued frames in order and watches everything that ends the
// connection. It returns the close code and reason, or -1 if the client is
// gone.
func (wc *wsConn) pump(ctx context.Context, f *fanout.Feeder, fed <-chan struct{}, readDone <-chan error, wg *sync.WaitGroup) (websocket.StatusCode, string) {
	const goingAway, slow = "gateway shutting down; resume from your last offset", "slow consumer, resume from your last offset"
	cfg := wc.s.cfg
	tick := time.NewTicker(cfg.PingInterval)
	defer tick.Stop()
	// A write blocked for IdleTimeout means a client that stopped reading:
	// the watchdog closes the connection under it. (One timer for the
	// connection's life: a context per write costs more than the write.)
	watchdog := time.AfterFunc(cfg.IdleTimeout, func() { _ = wc.c.CloseNow() })
	watchdog.Stop()
	defer watchdog.Stop()
	delay := time.NewTimer(time.Hour)
	delay.Stop()
	defer delay.Stop()
	pinging := make(chan struct{}, 1) // holds a token while a ping is out
	ended := false                    // the last event frame was written
	// flush sends what the batch held, under the watchdog.
	flush := func() error {
		watchdog.Reset(cfg.IdleTimeout)
		defer watchdog.Stop()
		return wc.cork.uncork()
	}
	for {
		// Write everything queued, corked: one system call for the batch,
		// not one per frame; between frames, heed only what cannot wait
		// for the queue to drain.
		wc.cork.cork()
		for {
			it, ok := wc.q.Head()
			if !ok {
				break
			}
			select {
			case <-ctx.Done():
				_ = flush()
				return websocket.StatusGoingAway, goingAway
			case <-tick.C:
				if wc.idle(ctx, pinging, wg) {
					_ = flush()
					return websocket.StatusPolicyViolation, "idle timeout"
				}
			default:
			}
			watchdog.Reset(cfg.IdleTimeout)
			err := wc.c.Write(context.Background(), websocket.MessageText, it.Bytes)
			watchdog.Stop()
			if err != nil {
				return -1, ""
			}
			wc.q.Pop()
			if it.Event {
				wc.sent.Inc()
			}
			ended = ended || it.End
		}
		if err := flush(); err != nil {
			return -1, ""
		}
		if ended && !wc.busy.Load() {
			// A control request sent before the end got its answer: the
			// orchestrator may publish the terminal event (cancelled)
			// before it answers the request that caused it.
			return websocket.StatusNormalClosure, "workflow ended"
		}
		select {
		case <-ctx.Done():
			return websocket.StatusGoingAway, goingAway
		case <-wc.q.Overflow():
			return CloseSlowConsumer, slow
		case <-wc.sub.Failed():
			return websocket.StatusInternalError, "event stream failed; resume from your last offset"
		case <-fed:
			fed = nil // the terminal event is queued, the hub took over, or the stream failed
			if f.Err() != nil {
				wc.s.log.Warn("websocket event stream failed", "tenant", wc.tenant, "workflow", wc.workflow, "err", f.Err())
				return websocket.StatusInternalError, "event stream failed; resume from your last offset"
			}
		case <-readDone:
			return -1, ""
		case <-tick.C:
			if wc.idle(ctx, pinging, wg) {
				return websocket.StatusPolicyViolation, "idle timeout"
			}
		case <-wc.q.Ready():
			if cfg.WriteDelay > 0 {
				// Let frames gather: one wake-up and one write for all
				// that arrive meanwhile (a push does not wake a writer
				// that is already due to look). Each connection keeps
				// its own timer: waking every subscriber of a workflow
				// at one instant (one timer per hub) measured worse,
				// a burst of 1,000 writers at once.
				delay.Reset(cfg.WriteDelay)
				select {
				case <-ctx.Done():
				case <-delay.C:
				}
			}
		}
	}
}

// idle runs at every ping interval: it reports a connection with no pong
// and no client frame for IdleTimeout, else sends a ping (unless one is
// still out) whose pong counts as a sign of life.
func (wc *wsConn) idle(ctx context.Context, pinging chan struct{}, wg *sync.WaitGroup) bool {
	timeout := wc.s.cfg.IdleTimeout
	if !wc.busy.Load() && time.Since(time.Unix(0, wc.last.Load())) > timeout {
		return true
	}
	select {
	case pinging <- struct{}{}:
	default:
		return false
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { <-pinging }()
		pctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if wc.c.Ping(pctx) == nil {
			wc.touch()
		}
	}()
	return false
}

// read handles client frames until the connection ends: a control frame is
// applied (one at a time, in order) and answered; a malformed one is
// answered with a frame_error.
func (wc *wsConn) read(ctx context.Context) error {
	for {
		_, b, err := wc.c.Read(ctx)
		if err != nil {
			return err
		}
		wc.touch()
		f, probs := decodeClientFrame(b)
		if probs != nil {
			msgs := make([]string, len(probs))
			for i, p := range probs {
				msgs[i] = p.Pointer + ": " + p.Message
			}
			wc.sendData(ctx, FrameClientError, wc.s.gw.ErrorBody("invalid_frame", "malformed client frame: "+strings.Join(msgs, "; "), probs))
			continue
		}
		if wc.refusal != nil {
			wc.sendData(ctx, FrameControlResult, ControlResult{Error: "forbidden",
				ControlResult: events.ControlResult{WorkflowID: wc.workflow, Message: wc.refusal(f.Type)}})
			continue
		}
		wc.busy.Store(true)
		res := wc.s.applyControl(ctx, wc.tenant, wc.workflow, f)
		wc.touch()
		wc.sendData(ctx, FrameControlResult, res) // queued before busy ends: see pump
		wc.busy.Store(false)
		wc.q.Wake()
	}
}

// sendData queues a gateway frame (offset 0) of type typ carrying v,
// waiting for room: a client that sends frames but reads none blocks its
// own reader, not the server.
func (wc *wsConn) sendData(ctx context.Context, typ string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	_ = wc.send(ctx, events.Frame{Epoch: wc.epoch, Type: typ, WorkflowID: wc.workflow, TenantID: wc.tenant, Time: time.Now().UTC(), Data: data}, false, true)
}

// send encodes and queues a frame, waiting for room if wait, else
// overflowing the queue. fanout.ErrSlow means the client is too far behind
// and is being closed: the frame was not queued, nor will any later one be.
func (wc *wsConn) send(ctx context.Context, f events.Frame, end, wait bool) error {
	it := fanout.Item{Bytes: fanout.AppendFrame(make([]byte, 0, 256+len(f.Data)), f), End: end, Event: f.Offset > 0, Offset: f.Offset, Type: f.Type}
	return wc.s.hubs.Enqueue(ctx, wc.q, it, wait, wc.tenant, wc.workflow)
}
