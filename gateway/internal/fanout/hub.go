package fanout

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
)

// Fan-out. Every subscriber replays a workflow's stored events through a
// follower of its own (bus.Follow), read only as fast as its client takes
// them. Once it has caught up it joins the workflow's hub: one follower
// per workflow per gateway whose events are decoded and encoded once and
// pushed, without ever waiting, into every joined subscriber's send queue.
// A thousand live subscribers then cost the NATS server one subscription
// (a follower needs no consumer: bus.Follow), not a thousand, and a slow
// one overflows its own queue (a WebSocket closes
// with 4008, an SSE or A2A stream ends) without holding up the others.
//
// The hand-over keeps every stream exact. The hub starts after the
// workflow's newest event at the time and keeps its most recent frames
// (Config.BufferBytes); its base is the newest offset it no longer
// holds, so it holds every event after base. A subscriber whose cursor
// (the offset of the last event it queued) is at or after base joins by
// taking, in one step under the hub's lock, the held frames after its
// cursor; from then on the hub pushes each new frame after the cursor.
// A subscriber behind base goes on with its own follower and tries again.

// Source is the event log fan-out reads: *bus.Bus.
type Source interface {
	// Follow calls fn with the workflow's events after offset after, in
	// order, until fn returns an error (bus.ErrStop: stop) or ctx ends.
	Follow(ctx context.Context, tenant, workflow string, after uint64, fn bus.FollowFunc) error
	// LastRecord is the workflow's newest event (offset 0 if none).
	LastRecord(ctx context.Context, tenant, workflow string) (bus.Record, error)
}

var _ Source = (*bus.Bus)(nil)

// Config configures a gateway's Hubs. Source is required; the zero value
// of every other field means its default.
type Config struct {
	Source Source
	// Logger gets the warnings of failed hubs and slow closes (the
	// gateway's, so they carry its component); default slog.Default().
	Logger *slog.Logger
	// BufferBytes bounds the frames a hub keeps for subscribers joining it.
	BufferBytes int
	// Linger keeps a hub without subscribers for a while: clients that
	// reconnect find it still following.
	Linger time.Duration
	// Hubs is the gauge of running hubs (agentbus_gateway_hubs) and
	// SlowCloses the counter of streams closed for being slow, by kind
	// (agentbus_gateway_slow_client_closes_total); default: counters no
	// registry holds.
	Hubs       prometheus.Gauge
	SlowCloses *prometheus.CounterVec
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Hubs == nil {
		c.Hubs = prometheus.NewGauge(prometheus.GaugeOpts{Name: "hubs"})
	}
	if c.SlowCloses == nil {
		c.SlowCloses = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slow_client_closes_total"}, []string{"kind"})
	}
}

// hubKey names a hub: one per workflow and epoch of the events stream.
type hubKey struct{ tenant, workflow, epoch string }

// Hubs is a gateway's set of hubs, and the feeds that join them (feed.go).
// Safe for concurrent use.
type Hubs struct {
	cfg Config
	// ctx ends every hub: the gateway's lifetime.
	ctx context.Context

	mu sync.Mutex
	m  map[hubKey]*hub
}

// New returns an empty set of hubs; every hub it starts ends with ctx.
func New(ctx context.Context, cfg Config) *Hubs {
	cfg.setDefaults()
	return &Hubs{cfg: cfg, ctx: ctx, m: map[hubKey]*hub{}}
}

// hubFrame is one encoded event a hub holds.
type hubFrame struct {
	off uint64
	it  Item
}

// Subscriber is one WebSocket, SSE or A2A stream's side of fan-out. Safe
// for concurrent use.
type Subscriber struct {
	q *Queue
	// cursor is the offset of the last event queued; while the subscriber
	// replays only its feeder touches it, once joined only the hub (under
	// its lock).
	cursor uint64
	// failed is closed when the hub the subscriber joined failed: the
	// stream must close so its client resumes from its offset.
	failed   chan struct{}
	failOnce sync.Once
}

// NewSubscriber returns a stream's subscriber, queueing into q the events
// after offset cursor.
func NewSubscriber(q *Queue, cursor uint64) *Subscriber {
	return &Subscriber{q: q, cursor: cursor, failed: make(chan struct{})}
}

// Queue is the subscriber's send queue.
func (s *Subscriber) Queue() *Queue { return s.q }

// Failed is closed when the hub the subscriber joined failed: the stream
// must close so its client resumes from its offset.
func (s *Subscriber) Failed() <-chan struct{} { return s.failed }

func (s *Subscriber) fail() { s.failOnce.Do(func() { close(s.failed) }) }

// hub follows one workflow's events for every subscriber of this gateway
// that has caught up with them.
type hub struct {
	hs  *Hubs
	key hubKey
	// base: every event after it is in buf or still to come.
	base   atomic.Uint64
	cancel context.CancelFunc

	mu       sync.Mutex
	buf      []hubFrame
	bufBytes int
	subs     map[*Subscriber]struct{}
	refs     int // streams holding the hub, joined or not
	done     bool
	idle     *time.Timer
}

// acquire returns the workflow's hub, started after its newest event if
// there was none, or nil when there is nothing to follow: the workflow's
// newest event is terminal. Every non-nil hub must be released.
func (hs *Hubs) acquire(tenant, workflow, epoch string) (*hub, error) {
	key := hubKey{tenant, workflow, epoch}
	if h := hs.existing(key); h != nil {
		return h, nil
	}
	// Read the newest event without holding the set: other workflows'
	// streams must not wait on this round trip.
	last, err := hs.cfg.Source.LastRecord(hs.ctx, tenant, workflow)
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
	h := &hub{hs: hs, key: key, cancel: cancel, subs: map[*Subscriber]struct{}{}, refs: 1}
	h.base.Store(last.Offset)
	hs.m[key] = h
	hs.cfg.Hubs.Inc()
	go h.run(ctx, last.Offset)
	return h, nil
}

// existing takes a reference on the running hub of key, if there is one.
func (hs *Hubs) existing(key hubKey) *hub {
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
func (h *hub) release(s *Subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s != nil {
		delete(h.subs, s)
	}
	h.refs--
	if h.refs > 0 || h.done {
		return
	}
	h.idle = time.AfterFunc(h.hs.cfg.Linger, func() {
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
		h.hs.cfg.Hubs.Dec()
	}
}

// join makes s a subscriber of the hub if its cursor is at or after the
// hub's base and the held frames after the cursor fit in its queue; it
// reports whether s joined. A hub that has ended takes no one.
func (h *hub) join(s *Subscriber) bool {
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
	items := make([]Item, 0, len(h.buf)-i)
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
	err := h.hs.cfg.Source.Follow(ctx, h.key.tenant, h.key.workflow, after, func(_ context.Context, rec bus.Record) error {
		f := events.NewFrame(rec.Envelope, rec.Offset, h.key.epoch)
		end := f.Terminal()
		h.broadcast(hubFrame{off: rec.Offset, it: Item{Bytes: AppendFrame(make([]byte, 0, 256+len(f.Data)), f),
			End: end, Event: true, Offset: rec.Offset, Type: f.Type, Record: &rec}})
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
	h.subs = map[*Subscriber]struct{}{}
	h.mu.Unlock()
	h.hs.mu.Unlock()
	h.cancel()
	for s := range subs {
		s.q.Wake()
	}
	if ended || stopped {
		return // subscribers got the terminal event, or are closing
	}
	h.hs.cfg.Logger.Warn("workflow event hub failed", "tenant", h.key.tenant, "workflow", h.key.workflow, "err", err)
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
	h.bufBytes += len(f.it.Bytes)
	for len(h.buf) > 1 && h.bufBytes > h.hs.cfg.BufferBytes {
		h.bufBytes -= len(h.buf[0].it.Bytes)
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
				h.hs.slowClose(s.q.kind, h.key.tenant, h.key.workflow, s.q.limit, f.off)
			}
			delete(h.subs, s)
		}
	}
}
