package gateway

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
)

// Fan-out. Every subscriber replays a workflow's stored events from its own
// ordered JetStream consumer, read only as fast as its client takes them.
// Once it has caught up it joins the workflow's hub: one ordered consumer
// per workflow per gateway whose events are decoded and encoded once and
// pushed, without ever waiting, into every joined subscriber's send queue.
// A thousand live subscribers then cost the NATS server one consumer, not a
// thousand, and a slow one overflows its own queue (CloseSlowConsumer)
// without holding up the others.
//
// The hand-over keeps every stream exact. The hub starts after the
// workflow's newest event at the time and keeps its most recent frames
// (hubConfig.bufferBytes); its base is the newest offset it no longer
// holds, so it holds every event after base. A subscriber whose cursor
// (the offset of the last event it queued) is at or after base joins by
// taking, in one step under the hub's lock, the held frames after its
// cursor; from then on the hub pushes each new frame after the cursor.
// A subscriber behind base goes on with its own consumer and tries again.

// hubConfig bounds hubs.
type hubConfig struct {
	// bufferBytes bounds the frames a hub keeps for subscribers joining it.
	bufferBytes int
	// linger keeps a hub without subscribers for a while: clients that
	// reconnect find it still following.
	linger time.Duration
}

// hubKey names a hub: one per workflow and epoch of the events stream.
type hubKey struct{ tenant, workflow, epoch string }

// hubs is a gateway's set of hubs, safe for concurrent use.
type hubs struct {
	g   *Gateway
	cfg hubConfig
	// ctx ends every hub: the gateway's lifetime.
	ctx context.Context

	mu sync.Mutex
	m  map[hubKey]*hub
}

func newHubs(ctx context.Context, g *Gateway, cfg hubConfig) *hubs {
	return &hubs{g: g, cfg: cfg, ctx: ctx, m: map[hubKey]*hub{}}
}

// hubFrame is one encoded event a hub holds.
type hubFrame struct {
	off uint64
	it  wsItem
}

// subscriber is one WebSocket or SSE stream's side of fan-out.
type subscriber struct {
	q *sendQueue
	// cursor is the offset of the last event queued; while the subscriber
	// replays only its feeder touches it, once joined only the hub (under
	// its lock).
	cursor uint64
	// failed is closed when the hub the subscriber joined failed: the
	// stream must close so its client resumes from its offset.
	failed   chan struct{}
	failOnce sync.Once
}

func newSubscriber(q *sendQueue, cursor uint64) *subscriber {
	return &subscriber{q: q, cursor: cursor, failed: make(chan struct{})}
}

func (s *subscriber) fail() { s.failOnce.Do(func() { close(s.failed) }) }

// hub follows one workflow's events for every subscriber of this gateway
// that has caught up with them.
type hub struct {
	hs  *hubs
	key hubKey
	// base: every event after it is in buf or still to come.
	base   atomic.Uint64
	cancel context.CancelFunc

	mu       sync.Mutex
	buf      []hubFrame
	bufBytes int
	subs     map[*subscriber]struct{}
	refs     int // streams holding the hub, joined or not
	done     bool
	idle     *time.Timer
}

// acquire returns the workflow's hub, started after its newest event if
// there was none, or nil when there is nothing to follow: the workflow's
// newest event is terminal. Every non-nil hub must be released.
func (hs *hubs) acquire(tenant, workflow, epoch string) (*hub, error) {
	key := hubKey{tenant, workflow, epoch}
	if h := hs.existing(key); h != nil {
		return h, nil
	}
	// Read the newest event without holding the set: other workflows'
	// streams must not wait on this round trip.
	last, err := hs.g.bus.LastRecord(hs.ctx, tenant, workflow)
	if err != nil {
		return nil, err
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h := hs.m[key]; h != nil { // started meanwhile
		h.take()
		return h, nil
	}
	if last.Envelope.Type.Terminal() {
		return nil, nil
	}
	ctx, cancel := context.WithCancel(hs.ctx)
	h := &hub{hs: hs, key: key, cancel: cancel, subs: map[*subscriber]struct{}{}, refs: 1}
	h.base.Store(last.Offset)
	hs.m[key] = h
	hs.g.stats().hubs.Inc()
	go h.run(ctx, last.Offset)
	return h, nil
}

// existing takes a reference on the running hub of key, if there is one.
func (hs *hubs) existing(key hubKey) *hub {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h := hs.m[key]
	if h != nil {
		h.take()
	}
	return h
}

// take adds a stream's reference and cancels a pending stop; call with
// hs.mu held, so that the hub is still in the set.
func (h *hub) take() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refs++
	if h.idle != nil {
		h.idle.Stop()
		h.idle = nil
	}
}

// release gives the hub up for one stream; the last one out stops it after
// the linger time.
func (h *hub) release(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s != nil {
		delete(h.subs, s)
	}
	h.refs--
	if h.refs > 0 || h.done {
		return
	}
	h.idle = time.AfterFunc(h.hs.cfg.linger, func() {
		h.hs.mu.Lock()
		h.mu.Lock()
		stop := h.refs == 0 && !h.done
		if stop {
			h.done = true
			h.forget()
		}
		h.mu.Unlock()
		h.hs.mu.Unlock()
		if stop {
			h.cancel()
		}
	})
}

// forget removes the hub from the gateway's set; call with hs.mu and h.mu
// held.
func (h *hub) forget() {
	if h.hs.m[h.key] == h {
		delete(h.hs.m, h.key)
		h.hs.g.stats().hubs.Dec()
	}
}

// join makes s a subscriber of the hub if its cursor is at or after the
// hub's base and the held frames after the cursor fit in its queue; it
// reports whether s joined. A hub that has ended takes no one.
func (h *hub) join(s *subscriber) bool {
	if s.cursor < h.base.Load() {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done || s.cursor < h.base.Load() {
		return false
	}
	i := len(h.buf)
	for i > 0 && h.buf[i-1].off > s.cursor {
		i--
	}
	items := make([]wsItem, 0, len(h.buf)-i)
	for _, f := range h.buf[i:] {
		items = append(items, f.it)
	}
	if !s.q.pushAll(items) {
		return false
	}
	if len(items) > 0 {
		s.cursor = h.buf[len(h.buf)-1].off
	}
	h.subs[s] = struct{}{}
	return true
}

// run follows the workflow after offset until its terminal event, a
// failure, or ctx ends.
func (h *hub) run(ctx context.Context, after uint64) {
	ended := false
	err := h.hs.g.bus.Follow(ctx, h.key.tenant, h.key.workflow, after, func(_ context.Context, rec bus.Record) error {
		f := events.NewFrame(rec.Envelope, rec.Offset, h.key.epoch)
		end := f.Terminal()
		h.broadcast(hubFrame{off: rec.Offset, it: wsItem{b: appendFrame(make([]byte, 0, 256+len(f.Data)), f),
			end: end, event: true, off: rec.Offset, typ: f.Type, rec: &rec}})
		if end {
			ended = true
			return bus.ErrStop
		}
		return nil
	})
	// Whether the hub was stopped (the gateway closing, or no stream
	// left) must be read before h.cancel below, which ends ctx too.
	stopped := ctx.Err() != nil
	if err == nil && !ended && !stopped {
		err = errors.New("gateway: event stream ended before the workflow did")
	}
	h.hs.mu.Lock()
	h.mu.Lock()
	h.done = true
	h.forget()
	subs := h.subs
	h.subs = map[*subscriber]struct{}{}
	h.mu.Unlock()
	h.hs.mu.Unlock()
	h.cancel()
	for s := range subs {
		s.q.wake()
	}
	if ended || stopped {
		return // subscribers got the terminal event, or are closing
	}
	h.hs.g.log.Warn("workflow event hub failed", "tenant", h.key.tenant, "workflow", h.key.workflow, "err", err)
	for s := range subs {
		s.fail()
	}
}

// broadcast keeps f and queues it for every subscriber not past it. A
// subscriber whose queue is full overflows (and is dropped): the hub never
// waits for a client.
func (h *hub) broadcast(f hubFrame) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buf = append(h.buf, f)
	h.bufBytes += len(f.it.b)
	for len(h.buf) > 1 && h.bufBytes > h.hs.cfg.bufferBytes {
		h.bufBytes -= len(h.buf[0].it.b)
		h.base.Store(h.buf[0].off)
		h.buf[0] = hubFrame{}
		h.buf = h.buf[1:]
	}
	for s := range h.subs {
		if f.off <= s.cursor {
			continue
		}
		s.cursor = f.off
		if overflowed, err := s.q.push(f.it); err != nil {
			if overflowed {
				h.hs.g.slowClose(s.q.kind, h.key.tenant, h.key.workflow, s.q.limit, f.off)
			}
			delete(h.subs, s)
		}
	}
}
