package gateway

import (
	"context"
	"sync"

	"github.com/agentbus/agentbus/bus"
)

// wsItem is one encoded frame (JSON, as a WebSocket message; an SSE
// stream wraps it in its event's lines): end closes the stream normally
// once it is written; event marks a workflow event (not a gateway frame),
// off its offset and typ its type. The bytes may be shared between streams
// and are never modified.
type wsItem struct {
	b          []byte
	end, event bool
	off        uint64
	typ        string
	// rec is the stored event itself, for streams that render records
	// rather than frames (A2A); nil for gateway frames.
	rec *bus.Record
}

// sendQueue is a connection's frames not yet written to its socket,
// bounded in bytes (the frame being written counts until it is written).
// One goroutine writes; any may push. Safe for concurrent use.
type sendQueue struct {
	limit int
	// kind is the stream's kind for metrics: metricKindWS or metricKindSSE.
	kind string
	// ready holds a token when the writer should look again; overflow is
	// closed when a push found no room.
	ready    chan struct{}
	overflow chan struct{}

	mu    sync.Mutex
	items []wsItem
	bytes int
	over  bool
	room  chan struct{} // closed by the next pop, for pushWait; nil if none waits
}

func newSendQueue(limit int, kind string) *sendQueue {
	return &sendQueue{limit: limit, kind: kind, ready: make(chan struct{}, 1), overflow: make(chan struct{})}
}

// fits reports whether n more bytes are within the limit. An empty queue
// takes any frame, so that one large frame still reaches a client that
// keeps up. Call with mu held.
func (q *sendQueue) fits(n int) bool { return q.bytes == 0 || q.bytes+n <= q.limit }

// add appends a frame and wakes the writer; call with mu held.
func (q *sendQueue) add(it wsItem) {
	q.items = append(q.items, it)
	q.bytes += len(it.b)
	q.wake()
}

// push appends a frame if it fits. If not, the queue overflows: it drops
// what it holds and refuses every later frame (errSlow), so that the frames
// the client did get stay contiguous. overflowed is true for the push that
// crossed the limit.
func (q *sendQueue) push(it wsItem) (overflowed bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.over {
		return false, errSlow
	}
	if !q.fits(len(it.b)) {
		q.over = true
		clear(q.items)
		q.items, q.bytes = nil, 0
		close(q.overflow)
		return true, errSlow
	}
	q.add(it)
	return false, nil
}

// pushAll appends every frame of items if together they fit, and reports
// whether they did; an overflowed queue takes nothing.
func (q *sendQueue) pushAll(items []wsItem) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, it := range items {
		n += len(it.b)
	}
	if q.over || (n > 0 && q.bytes > 0 && q.bytes+n > q.limit) {
		return false
	}
	for _, it := range items {
		q.add(it)
	}
	return true
}

// pushWait appends a frame once it fits, waiting for the writer to make
// room: backpressure instead of overflow. It fails if ctx ends or the
// queue overflowed meanwhile.
func (q *sendQueue) pushWait(ctx context.Context, it wsItem) error {
	for {
		q.mu.Lock()
		if q.over {
			q.mu.Unlock()
			return errSlow
		}
		if q.fits(len(it.b)) {
			q.add(it)
			q.mu.Unlock()
			return nil
		}
		if q.room == nil {
			q.room = make(chan struct{})
		}
		room := q.room
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-room:
		case <-q.overflow:
			return errSlow
		}
	}
}

// wake makes the writer look again.
func (q *sendQueue) wake() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// head returns the oldest frame without removing it.
func (q *sendQueue) head() (wsItem, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return wsItem{}, false
	}
	return q.items[0], true
}

// pop removes the oldest frame once it was written.
func (q *sendQueue) pop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return // dropped by an overflow meanwhile
	}
	q.bytes -= len(q.items[0].b)
	q.items[0] = wsItem{}
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.items = nil
	}
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
}
