package bus

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Publishing is a PublishAll started by PublishAllAsync: its messages are
// on their way, in order, and Wait waits for their acknowledgements.
type Publishing struct {
	b       *Bus
	msgs    []Message
	futures []jetstream.PubAckFuture
	started error // a message that could not be sent

	once sync.Once
	out  []Published
	err  error
}

// PublishAllAsync is PublishAll without the wait: it sends msgs, in order,
// and returns; Wait waits for their acknowledgements. A caller that holds
// a lock while it publishes can let go of it before the round trip, and
// wait later, when what it does next depends on the messages being stored.
// msgs must hold no terminal event, which PublishAll publishes in a wave
// of its own.
func (b *Bus) PublishAllAsync(msgs []Message) *Publishing {
	p := &Publishing{b: b, msgs: msgs}
	for _, m := range msgs {
		if m.Env.Type.Terminal() {
			p.started = fmt.Errorf("bus: publish %s asynchronously: a terminal event waits for the others", m.Env.Type)
			return p
		}
	}
	b.ops.sent(len(msgs))
	p.futures = make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, m := range msgs {
		msg, err := toMsg(m.Subject, m.Env)
		if err == nil {
			var f jetstream.PubAckFuture
			if f, err = b.js.PublishMsgAsync(withSchedule(msg, m), jetstream.WithMsgID(m.MsgID)); err == nil {
				p.futures = append(p.futures, f)
				continue
			}
		}
		p.started = fmt.Errorf("bus: publish %s to %s: %w", m.Env.Type, m.Subject, err)
		return p
	}
	return p
}

// Wait returns what PublishAll would have: each message's acknowledgement,
// in order. If any message was not stored, it publishes them all again
// with PublishAll (each has its dedup id, so one stored already is stored
// once) and returns what that does. Calling it again returns the same.
func (p *Publishing) Wait(ctx context.Context) ([]Published, error) {
	p.once.Do(func() { p.out, p.err = p.wait(ctx) })
	return p.out, p.err
}

func (p *Publishing) wait(ctx context.Context) ([]Published, error) {
	if p.started == nil {
		out := make([]Published, len(p.msgs))
		blocked, failed := false, false
		for i, f := range p.futures {
			var (
				ack  *jetstream.PubAck
				ferr error
			)
			select {
			case ack = <-f.Ok():
			case ferr = <-f.Err():
			default:
				if !blocked {
					// Not all back yet: a round trip waited for after all.
					blocked = true
					p.b.ops.waited()
				}
				select {
				case ack = <-f.Ok():
				case ferr = <-f.Err():
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			if ferr != nil {
				failed = true
				break
			}
			out[i] = Published{Stream: ack.Stream, Sequence: ack.Sequence, Duplicate: ack.Duplicate}
		}
		if !failed {
			return out, nil
		}
	}
	return p.b.PublishAll(ctx, p.msgs)
}
