package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/agentbus/agentbus/events"
)

// ErrNoResponder is returned by Request when nobody answered in time.
var ErrNoResponder = errors.New("bus: no responder")

// Notice is one decoded control message.
type Notice struct {
	Subject  string
	Envelope events.Envelope
	// Control is the envelope's data, decoded and checked.
	Control events.Control
	msg     *nats.Msg
}

// CanRespond reports whether the sender waits for an answer.
func (n *Notice) CanRespond() bool { return n.msg.Reply != "" }

// Respond answers a request; it is a no-op for a plain publish.
func (n *Notice) Respond(data []byte) error {
	if n.msg.Reply == "" {
		return nil
	}
	return n.msg.Respond(data)
}

// SubscribeControl runs fn for every control message on subject
// (wildcards allowed) until ctx ends; events.DecodeControl reads each, so
// a bare JSON body published with no headers is as good as the full
// CloudEvent. With a queue name, one subscriber of the queue group gets
// each message, and it answers a request it cannot understand with an
// events.ControlAnswer and logs it with its subject; without (workers, which
// every cancel must reach), every subscriber gets each message and leaves
// the answering to the group. fn runs on the subscription's goroutine, one
// message at a time.
func (b *Bus) SubscribeControl(ctx context.Context, subject, queue string, fn func(ctx context.Context, n *Notice)) error {
	handler := func(m *nats.Msg) {
		env, c, err := events.DecodeControl(m.Subject, m.Header, m.Data)
		if err != nil {
			if queue == "" {
				b.log.Debug("control message not understood", "subject", m.Subject, "err", err)
				return
			}
			b.log.Warn("control message not understood", "subject", m.Subject, "err", err)
			if m.Reply != "" {
				ans := events.ControlAnswer{Error: err.Error()}
				var ce *events.ControlError
				if errors.As(err, &ce) {
					ans.Problems = ce.Problems
				}
				out, _ := json.Marshal(ans)
				_ = m.Respond(out)
			}
			return
		}
		fn(ctx, &Notice{Subject: m.Subject, Envelope: env, Control: c, msg: m})
	}
	var sub *nats.Subscription
	var err error
	if queue != "" {
		sub, err = b.nc.QueueSubscribe(subject, queue, handler)
	} else {
		sub, err = b.nc.Subscribe(subject, handler)
	}
	if err != nil {
		return fmt.Errorf("bus: subscribe %s: %w", subject, err)
	}
	context.AfterFunc(ctx, func() { _ = sub.Drain() })
	return nil
}

// Request publishes env on subject and waits for one answer until ctx ends.
func (b *Bus) Request(ctx context.Context, subject string, env events.Envelope) ([]byte, error) {
	m, err := toMsg(subject, env)
	if err != nil {
		return nil, err
	}
	resp, err := b.nc.RequestMsgWithContext(ctx, m)
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
		return nil, fmt.Errorf("%w on %s: %v", ErrNoResponder, subject, err)
	}
	if err != nil {
		return nil, fmt.Errorf("bus: request %s: %w", subject, err)
	}
	return resp.Data, nil
}
