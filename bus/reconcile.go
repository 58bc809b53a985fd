package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/events"
)

// What a reconciler needs from the server: where a stored message stands
// with the durable consumer that is to deliver it, a way to make that
// consumer rebuild its state, and the messages a work-queue stream still
// holds (nothing handled them yet). After a node's SIGKILL a clustered
// consumer has been seen to hold a message as delivered and unacknowledged
// without ever redelivering it (nats-server issue 6905 looks the same);
// these let the orchestrator notice that and recover.

// Holding says where a stored message stands with a consumer.
type Holding int

const (
	// Queued: not delivered yet (the consumer has not reached it).
	Queued Holding = iota
	// Held: delivered and not acknowledged — running, waiting to be
	// redelivered, or held by a consumer that will never redeliver it.
	Held
	// Acked: at or below the consumer's ack floor.
	Acked
)

// String names the holding.
func (h Holding) String() string {
	switch h {
	case Queued:
		return "queued"
	case Held:
		return "held"
	case Acked:
		return "acked"
	}
	return fmt.Sprintf("holding(%d)", int(h))
}

// ConsumerHold is a consumer's view of one stored message, with what the
// log of a recovery wants to say about the consumer.
type ConsumerHold struct {
	Holding Holding
	// AckWait is the consumer's; Leader the server leading it ("" on a
	// single server); AckPending and Redelivered its counts.
	AckWait     time.Duration
	Leader      string
	AckPending  int
	Redelivered int
	// Delivered and AckFloor are the consumer's stream sequences.
	Delivered, AckFloor uint64
}

// ConsumerHolds reads a durable consumer's state from its leader and says
// whether it holds the message stored at seq (delivered, not acked).
func (b *Bus) ConsumerHolds(ctx context.Context, stream, consumer string, seq uint64) (ConsumerHold, error) {
	c, err := b.js.Consumer(ctx, stream, consumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return ConsumerHold{}, fmt.Errorf("%w: consumer %s on %s", ErrNotFound, consumer, stream)
	}
	if err != nil {
		return ConsumerHold{}, fmt.Errorf("bus: consumer %s on %s: %w", consumer, stream, err)
	}
	info := c.CachedInfo()
	h := ConsumerHold{AckWait: info.Config.AckWait, AckPending: info.NumAckPending, Redelivered: info.NumRedelivered,
		Delivered: info.Delivered.Stream, AckFloor: info.AckFloor.Stream}
	if info.Cluster != nil {
		h.Leader = info.Cluster.Leader
	}
	switch {
	case seq <= h.AckFloor:
		h.Holding = Acked
	case seq > h.Delivered:
		h.Holding = Queued
	default:
		h.Holding = Held
	}
	return h, nil
}

// ErrNotClustered is returned by StepDownConsumer on a server that is not
// part of a cluster: a consumer there has no leader to step down.
var ErrNotClustered = errors.New("bus: not clustered")

// StepDownConsumer asks a clustered consumer's leader to step down
// ($JS.API.CONSUMER.LEADER.STEPDOWN): another replica takes over and
// rebuilds the pending state from the replicated log, which redelivers a
// message the old leader held without redelivering. A live delivery is
// unharmed: its acks go to the new leader.
func (b *Bus) StepDownConsumer(ctx context.Context, stream, consumer string) error {
	subj := fmt.Sprintf("$JS.API.CONSUMER.LEADER.STEPDOWN.%s.%s", stream, consumer)
	_, err := retryElection(ctx, b.electionWait, func(ctx context.Context) error {
		m, err := b.nc.RequestWithContext(ctx, subj, nil)
		if err != nil {
			return err
		}
		var resp struct {
			Success bool `json:"success"`
			Error   *struct {
				Code        int    `json:"code"`
				ErrCode     int    `json:"err_code"`
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &resp); err != nil {
			return fmt.Errorf("bad answer %q: %w", m.Data, err)
		}
		switch {
		case resp.Error != nil && resp.Error.ErrCode == jsErrNotClustered:
			return ErrNotClustered
		case resp.Error != nil:
			return &jetstream.APIError{Code: resp.Error.Code, ErrorCode: jetstream.ErrorCode(resp.Error.ErrCode), Description: resp.Error.Description}
		case !resp.Success:
			return fmt.Errorf("answered %s", m.Data)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bus: step down consumer %s on %s: %w", consumer, stream, err)
	}
	return nil
}

// jsErrNotClustered is nats-server's code (errors.json) for "JetStream not
// in clustered mode".
const jsErrNotClustered = 10010

// DeleteStored deletes the message stored at seq in stream if it is still
// the one published with msgID: a request given up on must never be
// delivered again. A message already gone is no error.
func (b *Bus) DeleteStored(ctx context.Context, stream string, seq uint64, msgID string) error {
	id, err := b.StoredMsgID(ctx, stream, seq)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if id != msgID {
		return nil // another message took the sequence (the server lost ours)
	}
	s, err := b.js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("bus: stream %s: %w", stream, err)
	}
	if err := s.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("bus: delete %s sequence %d: %w", stream, seq, err)
	}
	return nil
}

// StoredMessage is a message read back from a stream.
type StoredMessage struct {
	Sequence uint64
	Subject  string
	MsgID    string
	Time     time.Time
	Header   map[string][]string
	Envelope events.Envelope
	// Err is why the message did not decode (Envelope is then empty).
	Err error
}

// StoredBefore reads, oldest first, the messages stored in stream on
// subject (wildcards allowed) at or after sequence from and before the
// time before, at most limit of them. next is where a later read goes on
// (0 when it read everything stored before before). In a work-queue
// stream these are the messages no consumer has acknowledged.
func (b *Bus) StoredBefore(ctx context.Context, stream, subject string, from uint64, before time.Time, limit int) (msgs []StoredMessage, next uint64, err error) {
	s, err := b.js.Stream(ctx, stream)
	if err != nil {
		return nil, 0, fmt.Errorf("bus: stream %s: %w", stream, err)
	}
	seq := max(from, 1)
	for range limit {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return msgs, 0, nil
		}
		if err != nil {
			return msgs, seq, fmt.Errorf("bus: stream %s subject %s: %w", stream, subject, err)
		}
		if !m.Time.Before(before) {
			return msgs, 0, nil
		}
		sm := StoredMessage{Sequence: m.Sequence, Subject: m.Subject, MsgID: m.Header.Get(nats.MsgIdHdr), Time: m.Time, Header: m.Header}
		sm.Envelope, sm.Err = events.Decode(m.Header, m.Data)
		msgs = append(msgs, sm)
		seq = m.Sequence + 1
	}
	return msgs, seq, nil
}
