package fanout

import (
	"context"
	"errors"
	"sync"

	"github.com/agentbus/agentbus/bus"
)

// ErrSlow ends a slow consumer's feed: its queue overflowed.
var ErrSlow = errors.New("gateway: slow consumer")

// Item is one encoded frame (JSON, as a WebSocket message; an SSE
// stream wraps it in its event's lines): End closes the stream normally
// once it is written; Event marks a workflow event (not a gateway frame),
// Offset its offset and Type its type. The bytes may be shared between
// streams and are never modified: an Item is a value, safe to share.
type Item struct {
	Bytes      []byte
	End, Event bool
	Offset     uint64
	Type       string
	// Record is the stored event itself, for streams that render records
	// rather than frames (A2A); nil for gateway frames.
	Record *bus.Record
}

// Queue is a connection's frames not yet written to its socket, bounded
// in bytes (the frame being written counts until it is written). One
// goroutine writes (Head, Pop); the feeder, the hub and the connection's
// own goroutines push. Safe for concurrent use.
type Queue struct {
	limit int
	// kind is the stream's kind for metrics: KindWS, KindSSE or KindA2A.
	kind string
	// ready holds a token when the writer should look again; overflow is
	// closed when a push found no room.
	ready    chan struct{}
	overflow chan struct{}

	mu    sync.Mutex
	items []Item
	bytes int
	over  bool
	room  chan struct{} // closed by the next pop, for pushWait; nil if none waits
}

// NewQueue returns an empty queue of at most limit bytes for a stream of
// the given kind (KindWS, KindSSE or KindA2A: the label its slow close is
// counted under).
func NewQueue(limit int, kind string) *Queue {
	return &Queue{limit: limit, kind: kind, ready: make(chan struct{}, 1), overflow: make(chan struct{})}
}

// Ready holds a token when the writer should look at the queue again.
func (q *Queue) Ready() <-chan struct{} { return q.ready }

// Overflow is closed when a push found no room: the client fell a whole
// queue behind and its stream must end (it resumes from its offset).
func (q *Queue) Overflow() <-chan struct{} { return q.overflow }

// fits reports whether n more bytes are within the limit. An empty queue
// takes any frame, so that one large frame still reaches a client that
// keeps up. Call with mu held.
func (q *Queue) fits(n int) bool { return q.bytes == 0 || q.bytes+n <= q.limit }

// add appends a frame and wakes the writer; call with mu held.
func (q *Queue) add(it Item) {
	q.items = append(q.items, it)
	q.bytes += len(it.Bytes)
	q.Wake()
}

// push appends a frame if it fits. If not, the queue overflows: it drops
// what it holds and refuses every later frame (ErrSlow), so that the frames
// the client did get stay contiguous. overflowed is true for the push that
// crossed the limit.
func (q *Queue) push(it Item) (overflowed bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.over {
		return false, ErrSlow
	}
	if !q.fits(len(it.Bytes)) {
		q.over = true
		clear(q.items)
		q.items, q.bytes = nil, 0
		close(q.overflow)
		return true, ErrSlow
	}
	q.add(it)
	return false, nil
}

// pushAll appends every frame of items if together they fit, and reports
// whether they did; an overflowed queue takes nothing.
func (q *Queue) pushAll(items []Item) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, it := range items {
		n += len(it.Bytes)
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
func (q *Queue) pushWait(ctx context.Context, it Item) error {
	for {
		q.mu.Lock()
		if q.over {
			q.mu.Unlock()
			return ErrSlow
		}
		if q.fits(len(it.Bytes)) {
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
			return ErrSlow
		}
	}
}

// Wake makes the writer look again.
func (q *Queue) Wake() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Head returns the oldest frame without removing it.
func (q *Queue) Head() (Item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return Item{}, false
	}
	return q.items[0], true
}

// Pop removes the oldest frame once it was written.
func (q *Queue) Pop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return // dropped by an overflow meanwhile
	}
	q.bytes -= len(q.items[0].Bytes)
	q.items[0] = Item{}
	q.items = q.items[1:]
	if len(q.items) == 0 {
		q.items = nil
	}
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
}
