package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// errCanceled is the cause given to a running step's context when its
// workflow is canceled; errRecorded wraps it when the news came from the
// control bucket's watch rather than the control subject.
var (
	errCanceled = errors.New("agents: workflow canceled")
	errRecorded = fmt.Errorf("%w (its record in the control bucket)", errCanceled)
)

// Canceled reports whether a step's context ended because its workflow
// was canceled, rather than by a deadline or because the worker is
// stopping (then the step is handed back and delivered again). An agent
// that started work outside the worker, such as a child workflow, stops
// it on a cancel and may leave it for the next delivery otherwise.
func Canceled(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errCanceled) }

// cancels knows which workflows are canceled (from KV AGENTBUS_CONTROL and
// the control subject) and cancels the contexts of their running steps.
// Safe for concurrent use.
type cancels struct {
	mu       sync.Mutex
	canceled map[string]mark // "<tenant>.<workflow>" → why, and how it was learnt
	running  map[string]map[uint64]context.CancelCauseFunc
	next     uint64
}

// mark is a cancel known to a worker: its reason, and the cause its steps'
// contexts get (errRecorded when the control bucket's watch said it).
type mark struct {
	reason string
	cause  error
}

func newCancels() *cancels {
	return &cancels{canceled: map[string]mark{}, running: map[string]map[uint64]context.CancelCauseFunc{}}
}

func (c *cancels) isCanceled(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.canceled[key]
	return m.reason, ok
}

// cancel marks a workflow canceled and cancels its running steps with
// cause.
func (c *cancels) cancel(key, reason string, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.canceled[key] = mark{reason: reason, cause: cause}
	for _, f := range c.running[key] {
		f(cause)
	}
}

// forget drops a workflow whose control record was deleted.
func (c *cancels) forget(key string) {
	c.mu.Lock()
	delete(c.canceled, key)
	c.mu.Unlock()
}

// track derives a step context that a cancel of its workflow ends; call
// the returned function when the step is done.
func (c *cancels) track(ctx context.Context, key string) (context.Context, func()) {
	sctx, cancel := context.WithCancelCause(ctx)
	c.mu.Lock()
	if m, ok := c.canceled[key]; ok {
		cancel(m.cause)
	}
	c.next++
	id := c.next
	if c.running[key] == nil {
		c.running[key] = map[uint64]context.CancelCauseFunc{}
	}
	c.running[key][id] = cancel
	c.mu.Unlock()
	return sctx, func() {
		c.mu.Lock()
		delete(c.running[key], id)
		if len(c.running[key]) == 0 {
			delete(c.running, key)
		}
		c.mu.Unlock()
		cancel(nil)
	}
}

// watchCancels keeps the cancel set current: every record in KV
// AGENTBUS_CONTROL (so a restarted worker knows earlier cancels), and
// every cancel on a control subject (so running steps stop at once,
// before the orchestrator has even recorded it).
func (w *Worker) watchCancels(ctx context.Context) error {
	kv, err := w.cfg.Bus.KV(ctx, subjects.BucketControl)
	if err != nil {
		return err
	}
	err = kv.Watch(ctx, func(e bus.Entry, deleted bool) {
		var rec events.ControlRecord
		switch {
		case deleted:
			w.cancels.forget(e.Key)
		case json.Unmarshal(e.Value, &rec) == nil && rec.Canceled:
			w.cancels.cancel(e.Key, rec.Reason, errRecorded)
		}
	})
	if err != nil {
		return err
	}
	// Tenant and workflow were checked against the subject by
	// events.DecodeControl, bare messages' taken from it.
	return w.cfg.Bus.SubscribeControl(ctx, subjects.AllControl, "", func(_ context.Context, n *bus.Notice) {
		if n.Control.Action != events.ActionCancel {
			return
		}
		key, err := subjects.CheckpointKey(n.Envelope.TenantID, n.Envelope.WorkflowID)
		if err != nil {
			return
		}
		w.cancels.cancel(key, n.Control.Reason, errCanceled)
	})
}

// stillCanceled confirms a cancel mark against KV AGENTBUS_CONTROL before a
// step is dropped: a cancel that did not apply, or one cleared by a resume,
// is withdrawn there, and the watch may not have caught up yet.
func (w *Worker) stillCanceled(ctx context.Context, key string) bool {
	kv, err := w.cfg.Bus.KV(ctx, subjects.BucketControl)
	if err != nil {
		return true // cannot tell: the safe side is not to run it
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, bus.ErrNotFound) {
		w.cancels.forget(key)
		return false
	}
	if err != nil {
		return true
	}
	var rec events.ControlRecord
	if json.Unmarshal(e.Value, &rec) != nil || !rec.Canceled {
		w.cancels.forget(key)
		return false
	}
	return true
}
