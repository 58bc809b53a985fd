package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/subjects"
)

// A read of stored events asks for at most readBatch of them, or about
// readBatchBytes, in one direct get, and gives up on an answer that
// stops for readWait.
const (
	readBatch      = 256
	readBatchBytes = 1 << 20
	readWait       = 5 * time.Second
	// headerNumPending is how many more messages matched the read when
	// the server sent this one.
	headerNumPending = "Nats-Num-Pending"
)

// readFunc takes one stored event read, and how many more the stream
// held on its subject when it was read; false stops the reading.
type readFunc func(seq, pending uint64, h nats.Header, data []byte) bool

// readEvents reads the events stored on subj from sequence from on, up to
// readBatch of them, with one batched direct get (any replica of the
// events stream answers it), and hands each to fn in order; fn returning
// false stops the hand-over (the rest of the answer is read and
// dropped). It returns how many fn was given — 0 when the answering
// server has none — and how many more the stream held on subj past the
// last of them.
func (b *Bus) readEvents(ctx context.Context, subj string, from uint64, fn readFunc) (n int, more uint64, err error) {
	inbox := b.nc.NewInbox()
	// A channel of its own, sized to the answer (readBatch messages and
	// the status that ends them): SubscribeSync's is nats.go's default
	// 65,536 slots, half a MiB allocated and cleared for every read.
	ch := make(chan *nats.Msg, readBatch+8)
	sub, err := b.nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return 0, 0, fmt.Errorf("bus: read %s: %w", subj, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	req, _ := json.Marshal(struct {
		Seq      uint64 `json:"seq"`
		NextFor  string `json:"next_by_subj"`
		Batch    int    `json:"batch"`
		MaxBytes int    `json:"max_bytes"`
	}{from, subj, readBatch, readBatchBytes})
	if err := b.nc.PublishRequest("$JS.API.DIRECT.GET."+subjects.StreamEvents, inbox, req); err != nil {
		return 0, 0, fmt.Errorf("bus: read %s: %w", subj, err)
	}
	taking := true
	wait := time.NewTimer(readWait)
	defer wait.Stop()
	for {
		var m *nats.Msg
		select {
		case m = <-ch:
		case <-ctx.Done():
			return n, more, ctx.Err()
		case <-wait.C:
			err := nats.ErrTimeout
			if b.nc.IsClosed() {
				err = nats.ErrConnectionClosed
			}
			return n, more, fmt.Errorf("bus: read %s from %d: %w", subj, from, err)
		}
		wait.Reset(readWait)
		switch status := m.Header.Get("Status"); status {
		case "":
		case "204", "404": // end of the batch; none at all
			return n, more, nil
		default:
			return n, more, fmt.Errorf("bus: read %s from %d: %s %s", subj, from, status, m.Header.Get("Description"))
		}
		seq, err := strconv.ParseUint(m.Header.Get(nats.JSSequence), 10, 64)
		if err != nil {
			return n, more, fmt.Errorf("bus: read %s from %d: an answer without a sequence", subj, from)
		}
		more, _ = strconv.ParseUint(m.Header.Get(headerNumPending), 10, 64)
		if taking {
			taking = fn(seq, more, m.Header, m.Data)
			n++
		}
	}
}

// readOrdered reads the events stored on subj from sequence from on with
// an ordered consumer, handing each to fn in order, until it has handed
// one at or past to, the stream holds none after it, or fn returns
// false. It is for a backlog too long for direct gets: for each message
// with headers (every event) the server rewrites them, which made a
// replay of 100,000 events read by direct gets take twice as long. fn
// runs in the consumer's callback, one at a time, while readOrdered
// waits; never after it returns. It gives up when nothing came for
// readWait.
func (b *Bus) readOrdered(ctx context.Context, subj string, from, to uint64, fn readFunc) error {
	cons, err := b.js.OrderedConsumer(ctx, subjects.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subj}, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from,
		InactiveThreshold: time.Minute})
	if err != nil {
		return fmt.Errorf("bus: read %s from %d: %w", subj, from, err)
	}
	var mu sync.Mutex
	stopped := false
	done := make(chan struct{})
	var last atomic.Uint64
	cc, err := cons.Consume(func(m jetstream.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		md, err := m.Metadata()
		if err != nil {
			return
		}
		last.Store(md.Sequence.Stream)
		if !fn(md.Sequence.Stream, md.NumPending, m.Headers(), m.Data()) || md.Sequence.Stream >= to || md.NumPending == 0 {
			stopped = true
			close(done)
		}
	}, jetstream.PullMaxMessages(1024), jetstream.PullHeartbeat(followHeartbeat),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			b.log.Debug("reader consumer", "subject", subj, "err", err)
		}))
	if err != nil {
		return fmt.Errorf("bus: read %s from %d: %w", subj, from, err)
	}
	defer func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		go b.deleteOrdered(ctx, cons, cc)
	}()
	t := time.NewTicker(readWait)
	defer t.Stop()
	seen := last.Load()
	for {
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if now := last.Load(); now != seen {
				seen = now
				continue
			}
			return fmt.Errorf("bus: read %s from %d: nothing for %s after %d", subj, from, readWait, seen)
		}
	}
}
