package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/events"
)

// Published is JetStream's acknowledgement of a publish.
type Published struct {
	Stream    string
	Sequence  uint64
	Duplicate bool // the dedup key was seen within the window: stored once
}

// Publish encodes env in CloudEvents binary mode and publishes it to a
// JetStream subject with Nats-Msg-Id msgID, waiting for the stream's ack. A
// retried publish with the same msgID within the dedup window is stored once.
// With a msgID, a stream that is electing a leader is waited out until ctx
// ends (election.go); without one a publish is tried once, since a retry
// could store it twice.
func (b *Bus) Publish(ctx context.Context, subject string, env events.Envelope, msgID string) (Published, error) {
	b.ops.publish(1)
	m, err := toMsg(subject, env)
	if err != nil {
		return Published{}, err
	}
	opts := []jetstream.PublishOpt{}
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	var ack *jetstream.PubAck
	publish := func(ctx context.Context) (err error) {
		ack, err = b.js.PublishMsg(ctx, m, opts...)
		return err
	}
	var retried int
	if msgID == "" {
		err = publish(ctx)
	} else {
		retried, err = retryElection(ctx, b.electionWait, publish)
	}
	if err != nil {
		return Published{}, fmt.Errorf("bus: publish %s to %s: %w", env.Type, subject, err)
	}
	if retried > 0 {
		b.log.Info("publish stored after a stream election", "subject", subject, "retries", retried)
	}
	return Published{Stream: ack.Stream, Sequence: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// Notify publishes env on core NATS (no stream): for control messages, which
// are recorded in KV separately.
func (b *Bus) Notify(subject string, env events.Envelope) error {
	m, err := toMsg(subject, env)
	if err != nil {
		return err
	}
	if err := b.nc.PublishMsg(m); err != nil {
		return fmt.Errorf("bus: notify %s: %w", subject, err)
	}
	return nil
}

func toMsg(subject string, env events.Envelope) (*nats.Msg, error) {
	enc, err := events.Encode(env)
	if err != nil {
		return nil, err
	}
	return &nats.Msg{Subject: subject, Header: nats.Header(enc.Header), Data: enc.Data}, nil
}

// Pending is one message of a PublishBatch.
type Pending struct {
	Subject string
	Env     events.Envelope
	MsgID   string
}

// PublishBatch publishes msgs in order without waiting for each ack before
// sending the next, then waits for every ack: one round trip for the batch
// instead of one per message. JetStream stores them in the order sent. If
// any fails, the error is returned and the caller retries the whole batch;
// the dedup keys store every message once, though a retried message may
// then land after ones that had succeeded.
func (b *Bus) PublishBatch(ctx context.Context, msgs []Pending) error {
	if len(msgs) == 1 {
		_, err := b.Publish(ctx, msgs[0].Subject, msgs[0].Env, msgs[0].MsgID)
		return err
	}
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, p := range msgs {
		m, err := toMsg(p.Subject, p.Env)
		if err != nil {
			return err
		}
		f, err := b.js.PublishMsgAsync(m, jetstream.WithMsgID(p.MsgID))
		if err != nil {
			return fmt.Errorf("bus: publish %s to %s: %w", p.Env.Type, p.Subject, err)
		}
		futures = append(futures, f)
	}
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("bus: publish %s to %s: %w", msgs[i].Env.Type, msgs[i].Subject, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
