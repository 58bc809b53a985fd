package fanout

import (
	"context"
	"errors"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
)

// feed queues the workflow's events after sub.cursor for one stream until
// the terminal one: from the stream's own follower while it replays,
// then from the workflow's hub as soon as it can join it (see
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
func (hs *Hubs) feed(ctx context.Context, sub *Subscriber, tenant, workflow, epoch string, live bool) (*hub, error) {
	h, err := hs.acquire(tenant, workflow, epoch)
	if err != nil {
		return nil, err
	}
	if h != nil && h.join(sub) {
		return h, nil
	}
	joined, ended := false, false
	err = hs.cfg.Source.Follow(ctx, tenant, workflow, sub.cursor, func(ctx context.Context, rec bus.Record) error {
		f := events.NewFrame(rec.Envelope, rec.Offset, epoch)
		end := f.Terminal()
		it := Item{Bytes: AppendFrame(make([]byte, 0, 256+len(f.Data)), f), End: end, Event: true, Offset: rec.Offset, Type: f.Type, Record: &rec}
		if err := hs.Enqueue(ctx, sub.q, it, !live, tenant, workflow); err != nil {
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
	case errors.Is(err, ErrSlow) || ctx.Err() != nil:
		return h, nil
	case err == nil && !ended && !joined:
		// Follow may end without error when the NATS connection under it
		// drains (a consumer it reads with is closed): the stream must not
		// then hang open with nothing more to come.
		return h, errors.New("gateway: event stream ended before the workflow did")
	}
	return h, err
}

// Feeder runs a feed for one stream in a goroutine of its own. Safe for
// concurrent use.
type Feeder struct {
	sub *Subscriber
	// done is closed when feed returned; then hub and err are set.
	done chan struct{}
	hub  *hub
	err  error
}

// StartFeed starts feeding sub the workflow's events after its cursor
// until the terminal one: from the stream's own follower while it
// replays, then from the workflow's hub once caught up (live says the
// stream starts caught up). While replaying, a full queue makes the feed
// wait for the client; once caught up, a full queue overflows. The stream
// must call Stop once ctx has ended.
func (hs *Hubs) StartFeed(ctx context.Context, sub *Subscriber, tenant, workflow, epoch string, live bool) *Feeder {
	f := &Feeder{sub: sub, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.hub, f.err = hs.feed(ctx, sub, tenant, workflow, epoch, live)
	}()
	return f
}

// StartFunc runs feed as sub's feeder, with no hub: for a stream fed from
// elsewhere than one workflow's events (the tenant feed). The stream must
// call Stop once feed's context has ended.
func StartFunc(sub *Subscriber, feed func() error) *Feeder {
	f := &Feeder{sub: sub, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.err = feed()
	}()
	return f
}

// Done is closed when the feed returned: the terminal event is queued,
// the subscriber joined its hub (which queues from then on), or the feed
// failed (Err).
func (f *Feeder) Done() <-chan struct{} { return f.done }

// Err is why the feed failed, once Done is closed; nil if it did not.
func (f *Feeder) Err() error { return f.err }

// Stop waits for the feeder and gives up the hub the subscriber joined.
func (f *Feeder) Stop() {
	<-f.done
	if f.hub != nil {
		f.hub.release(f.sub)
	}
}

// Enqueue queues one frame, waiting for room if wait, else overflowing the
// queue (counted and logged here). ErrSlow means the client is too far
// behind and is being closed: the frame was not queued, nor will any later
// one be.
func (hs *Hubs) Enqueue(ctx context.Context, q *Queue, it Item, wait bool, tenant, workflow string) error {
	if wait {
		return q.pushWait(ctx, it)
	}
	overflowed, err := q.push(it)
	if overflowed {
		hs.slowClose(q.kind, tenant, workflow, q.limit, it.Offset)
	}
	return err
}

// slowClose counts and logs a stream closed for being a whole send queue
// behind.
func (hs *Hubs) slowClose(kind, tenant, workflow string, limit int, offset uint64) {
	hs.cfg.SlowCloses.WithLabelValues(kind).Inc()
	hs.cfg.Logger.Warn("slow consumer closed", "kind", kind, "tenant", tenant, "workflow", workflow,
		"send_queue_bytes", limit, "offset", offset)
}
