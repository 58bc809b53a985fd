package gateway

import (
	"context"
	"errors"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
)

// feed queues the workflow's events after sub.cursor for one stream until
// the terminal one: from the stream's own ordered consumer while it
// replays, then from the workflow's hub as soon as it can join it (see
// hub.go). live says the stream starts caught up.
//
// It returns the hub the subscriber joined, or nil if it never did; the
// caller must release a returned hub when the stream ends. Only a failure
// of the event stream is an error: the terminal event, an overflow (the
// queue says so) and the end of ctx return nil.
//
// While replaying, a full queue makes feed wait for the client: the events
// are safe in JetStream and a replay of any length needs no more buffer
// than the queue. Once caught up (a record with nothing pending behind it),
// a full queue means the client fell a whole queue behind: it overflows.
func (g *Gateway) feed(ctx context.Context, sub *subscriber, tenant, workflow, epoch string, live bool) (*hub, error) {
	h, err := g.hubs.acquire(tenant, workflow, epoch)
	if err != nil {
		return nil, err
	}
	if h != nil && h.join(sub) {
		return h, nil
	}
	joined, ended := false, false
	err = g.bus.Follow(ctx, tenant, workflow, sub.cursor, func(ctx context.Context, rec bus.Record) error {
		f := events.NewFrame(rec.Envelope, rec.Offset, epoch)
		end := f.Terminal()
		it := wsItem{b: appendFrame(make([]byte, 0, 256+len(f.Data)), f), end: end, event: true, off: rec.Offset, typ: f.Type, rec: &rec}
		if err := g.enqueue(ctx, sub.q, it, !live, tenant, workflow); err != nil {
			return err
		}
		sub.cursor = rec.Offset
		live = live || rec.Pending == 0
		if end {
			ended = true
			return bus.ErrStop
		}
		// Join only once caught up: a subscriber still working through a
		// backlog keeps waiting for its client (never closed for being
		// slow while it replays), which the hub does not do.
		if h != nil && live && h.join(sub) {
			joined = true
			return bus.ErrStop
		}
		return nil
	})
	if h != nil && !joined {
		h.release(nil)
		h = nil
	}
	switch {
	case errors.Is(err, errSlow) || ctx.Err() != nil:
		return h, nil
	case err == nil && !ended && !joined:
		// Follow also ends without error when its consumer is closed
		// under it (the NATS connection draining): the stream must not
		// then hang open with nothing more to come.
		return h, errors.New("gateway: event stream ended before the workflow did")
	}
	return h, err
}

// feeder runs feed for one stream in a goroutine of its own.
type feeder struct {
	sub *subscriber
	// done is closed when feed returned; then hub and err are set.
	done chan struct{}
	hub  *hub
	err  error
}

// startFeed starts feeding sub (see feed). The stream must call stop once
// the feeder's ctx has ended.
func (g *Gateway) startFeed(ctx context.Context, sub *subscriber, tenant, workflow, epoch string, live bool) *feeder {
	f := &feeder{sub: sub, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.hub, f.err = g.feed(ctx, sub, tenant, workflow, epoch, live)
	}()
	return f
}

// stop waits for the feeder and gives up the hub the subscriber joined.
func (f *feeder) stop() {
	<-f.done
	if f.hub != nil {
		f.hub.release(f.sub)
	}
}

// enqueue queues one frame, waiting for room if wait, else overflowing the
// queue (counted and logged here). errSlow means the client is too far
// behind and is being closed: the frame was not queued, nor will any later
// one be.
func (g *Gateway) enqueue(ctx context.Context, q *sendQueue, it wsItem, wait bool, tenant, workflow string) error {
	if wait {
		return q.pushWait(ctx, it)
	}
	overflowed, err := q.push(it)
	if overflowed {
		g.slowClose(q.kind, tenant, workflow, q.limit, it.off)
	}
	return err
}

// slowClose counts and logs a stream closed for being a whole send queue
// behind.
func (g *Gateway) slowClose(kind, tenant, workflow string, limit int, offset uint64) {
	g.stats().slowCloses.WithLabelValues(kind).Inc()
	g.log.Warn("slow consumer closed", "kind", kind, "tenant", tenant, "workflow", workflow,
		"send_queue_bytes", limit, "offset", offset)
}
