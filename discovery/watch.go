package discovery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentbus/agentbus/bus"
)

// ErrClosed is returned by the index's readers once the Registry is closed
// or its connection is.
var ErrClosed = errors.New("discovery: registry closed")

// watchRetry bounds the wait before watching again after a watch ended
// on its own.
const (
	watchRetryMin = 50 * time.Millisecond
	watchRetryMax = 5 * time.Second
)

// ready starts the index's watch on first use and waits until the index
// holds every registration stored when it started (later changes follow
// within the watch's latency). If the first watch fails, ready says why at
// once while the index keeps trying. Writers (workers) never start it.
func (r *Registry) ready(ctx context.Context) (*index, error) {
	r.startOnce.Do(func() {
		wctx, cancel := context.WithCancel(context.Background())
		r.stop = cancel
		go r.follow(wctx)
	})
	select {
	case <-r.stopped:
		return nil, ErrClosed
	default:
	}
	select {
	case <-r.synced:
		return r.idx, nil
	default:
	}
	select {
	case <-r.synced:
		return r.idx, nil
	case <-r.stopped:
		return nil, ErrClosed
	case <-r.failed:
		return nil, fmt.Errorf("discovery: the agents index is not ready: %w", r.failure)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// follow keeps the index current until ctx ends or the connection closes.
// The KV watch rides an ordered consumer that survives reconnects and
// server restarts on its own, but only after missing its heartbeats
// (seconds, during which heartbeats would go unseen and every agent would
// look unreachable); so follow watches again at once when the connection
// comes back, and after a backoff when the watch ends on its own. A new
// watch delivers every stored registration, and whatever it did not
// deliver (deleted or expired meanwhile) is dropped.
func (r *Registry) follow(ctx context.Context) {
	defer close(r.stopped)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the reconnect listener too
	reconnected := r.cfg.Bus.Reconnected(ctx)
	wait := watchRetryMin
	first := true
	for {
		gen := r.idx.begin()
		wctx, stopWatch := context.WithCancel(ctx)
		done, err := r.kv.WatchDone(wctx, func(e bus.Entry, deleted bool) {
			r.idx.apply(e.Key, e.Value, deleted, gen)
		})
		again := false
		if err == nil {
			r.idx.prune(gen)
			if first {
				first = false
				close(r.synced)
			}
			wait = watchRetryMin
			select {
			case <-done:
			case <-reconnected:
				again = true
			}
		}
		stopWatch()
		if done != nil {
			<-done // the old watch's fn never runs beside the new one's
		}
		if ctx.Err() != nil || r.closed() {
			return
		}
		if again {
			r.cfg.Logger.Debug("discovery: reconnected; watching the agents again")
			continue
		}
		if first && err != nil {
			r.failOnce.Do(func() { r.failure = err; close(r.failed) })
		}
		r.cfg.Logger.Warn("discovery: the agents index's watch ended; watching again", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, watchRetryMax)
	}
}

// closed reports whether the registry's connection is closed or closing
// for good.
func (r *Registry) closed() bool {
	c := r.cfg.Bus.Conn()
	return c.IsClosed() || c.IsDraining()
}

// Close stops the index's watch and waits for it to end. The registry's
// writes (Put, Remove) and List still work; Discover and Catalog answer
// ErrClosed, and Serves asks the bucket. Safe to call twice and
// concurrently.
func (r *Registry) Close() {
	r.startOnce.Do(func() { close(r.stopped) }) // never started: never will
	if r.stop != nil {
		r.stop()
	}
	<-r.stopped
}
