package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Message is one message of PublishAll: a Pending, published at once or
// scheduled.
type Message struct {
	Pending
	// At, when set, schedules the message (a nats-server 2.12 message
	// schedule, in a stream that allows them): it is stored on Subject,
	// replacing the one scheduled there before, and at At (rounded up to a
	// whole second) the server publishes a copy of it on Target, without
	// its Nats-Msg-Id.
	At     time.Time
	Target string
}

// PublishAll is PublishBatch for Messages, that also returns each one's
// acknowledgement, in order: the stream and sequence where it is stored
// (for a duplicate, where the first copy is stored), so that a caller can
// later ask whether it is still there (StoredMsgID).
//
// A workflow's terminal event (complete, error, cancelled) is published
// only once every other message was acknowledged. Asynchronous publishes
// may fail in part — a stream's leader dies while they are in flight — and
// the caller's retry then stores the failed ones after those that made
// it: a terminal event stored before the events it ends would hide them
// from every follower, which stops at it.
func (b *Bus) PublishAll(ctx context.Context, msgs []Message) ([]Published, error) {
	out := make([]Published, len(msgs))
	var first, last []int
	for i, p := range msgs {
		if p.Env.Type.Terminal() {
			last = append(last, i)
		} else {
			first = append(first, i)
		}
	}
	for _, wave := range [][]int{first, last} {
		if len(wave) == 0 {
			continue
		}
		// A stream electing a leader is waited out (election.go); every
		// message has its dedup id, so a wave sent again is stored once.
		retried, err := retryElection(ctx, b.electionWait, func(ctx context.Context) error {
			return b.publishWave(ctx, msgs, wave, out)
		})
		if err != nil {
			return nil, err
		}
		if retried > 0 {
			b.log.Info("publish stored after a stream election", "subject", msgs[wave[0]].Subject, "messages", len(wave), "retries", retried)
		}
	}
	return out, nil
}

// publishWave publishes msgs[i] for each i of wave without waiting between
// them, then waits for every acknowledgement, recording each in out[i].
func (b *Bus) publishWave(ctx context.Context, msgs []Message, wave []int, out []Published) error {
	b.ops.publish(len(wave))
	futures := make([]jetstream.PubAckFuture, 0, len(wave))
	for _, i := range wave {
		p := msgs[i]
		m, err := toMsg(p.Subject, p.Env)
		if err != nil {
			return err
		}
		f, err := b.js.PublishMsgAsync(withSchedule(m, p), jetstream.WithMsgID(p.MsgID))
		if err != nil {
			return fmt.Errorf("bus: publish %s to %s: %w", p.Env.Type, p.Subject, err)
		}
		futures = append(futures, f)
	}
	for k, f := range futures {
		i := wave[k]
		select {
		case ack := <-f.Ok():
			out[i] = Published{Stream: ack.Stream, Sequence: ack.Sequence, Duplicate: ack.Duplicate}
		case err := <-f.Err():
			return fmt.Errorf("bus: publish %s to %s: %w", msgs[i].Env.Type, msgs[i].Subject, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// withSchedule adds p's schedule (Message.At), if it has one, to m.
func withSchedule(m *nats.Msg, p Message) *nats.Msg {
	if !p.At.IsZero() {
		at := p.At.UTC().Add(time.Second - 1).Truncate(time.Second)
		m.Header.Set("Nats-Schedule", "@at "+at.Format(time.RFC3339))
		m.Header.Set("Nats-Schedule-Target", p.Target)
	}
	return m
}

// StoredMsgID returns the Nats-Msg-Id of the message stored at seq in
// stream, or ErrNotFound if none is: in a work-queue stream, a message that
// was acknowledged, or one the server lost. Compare the id with the one
// published, since a server that lost a message may give its sequence to
// another. It reads through the stream's leader, never a lagging replica.
func (b *Bus) StoredMsgID(ctx context.Context, stream string, seq uint64) (string, error) {
	b.ops.lookup()
	s, err := b.js.Stream(ctx, stream)
	if err != nil {
		return "", fmt.Errorf("bus: stream %s: %w", stream, err)
	}
	m, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return "", fmt.Errorf("%w: %s sequence %d", ErrNotFound, stream, seq)
	}
	if err != nil {
		return "", fmt.Errorf("bus: stream %s sequence %d: %w", stream, seq, err)
	}
	return m.Header.Get(nats.MsgIdHdr), nil
}

// FindMsgID looks through the messages stored in stream on subject, oldest
// first, for one whose Nats-Msg-Id match accepts. It reads at most limit
// messages: complete is false when it stopped there without finding one,
// and the answer is then unknown. Each message read is one request, so it
// suits subjects that hold few messages (one workflow's replies or timers).
func (b *Bus) FindMsgID(ctx context.Context, stream, subject string, match func(msgID string) bool, limit int) (found, complete bool, err error) {
	b.ops.lookup()
	s, err := b.js.Stream(ctx, stream)
	if err != nil {
		return false, false, fmt.Errorf("bus: stream %s: %w", stream, err)
	}
	seq := uint64(1)
	for range limit {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return false, true, nil
		}
		if err != nil {
			return false, false, fmt.Errorf("bus: stream %s subject %s: %w", stream, subject, err)
		}
		if match(m.Header.Get(nats.MsgIdHdr)) {
			return true, true, nil
		}
		seq = m.Sequence + 1
	}
	return false, false, nil
}
