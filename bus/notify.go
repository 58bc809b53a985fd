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

// Notice is one decoded core-NATS message (control messages).
type Notice struct {
	Subject  string
	Envelope events.Envelope
	msg      *nats.Msg
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

// Subscribe runs fn for every decodable message on subject (wildcards
// allowed) until ctx ends. With a queue name, one subscriber of the queue
// group gets each message; without, every subscriber does. Messages that
// fail events.Decode are logged and, for requests, answered with the
// error. fn runs on the subscription's goroutine, one message at a time.
func (b *Bus) Subscribe(ctx context.Context, subject, queue string, fn func(ctx context.Context, n *Notice)) error {
	handler := func(m *nats.Msg) {
		env, err := events.Decode(m.Header, m.Data)
		if err != nil {
			b.log.Warn("malformed control message", "subject", m.Subject, "err", err)
			if m.Reply != "" {
				b, _ := json.Marshal(map[string]string{"error": err.Error()})
				_ = m.Respond(b)
			}
			return
		}
		fn(ctx, &Notice{Subject: m.Subject, Envelope: env, msg: m})
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
