package bus

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A Puller asks a durable pull consumer for one message at a time over a
// subscription of its own, kept for as long as its loop runs (a Consume
// loop, a Watermill subscription), in JetStream's pull protocol (ADR-13:
// a request to $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer> whose reply
// subject gets the message, heartbeats and status messages). A request
// given up on takes its subscription with it (renew).
//
// It does what nats.go's Consumer.Next does for one message, less what
// a loop pulling message after message pays for: Next subscribes to a new
// inbox for every message and unsubscribes after it. That is a SUB and an
// UNSUB the server applies to its account's subscription list under a
// write lock (every publish in the account matches against that list),
// an inbox the list's cache has never seen, and a goroutine, for each of
// the two messages a step consumes (its request, its reply).
// BenchmarkWorkflowsParallel's profiles showed that near a tenth of the
// process's CPU and most of the nats.go connection's lock contention.
type Puller struct {
	nc      *nats.Conn
	subject string // where requests go
	inbox   string // request n gets the reply subject inbox + n
	sub     *nats.Subscription
	msgs    chan *nats.Msg
	request []byte        // the pull request, in JSON
	beat    time.Duration // the heartbeat asked for
	timer   *time.Timer   // the heartbeat watch
	n       uint64        // requests made
	// abandoned: the last request was given up on (its heartbeats stopped,
	// or its caller's context ended) while the server may still hold it.
	abandoned bool
	closed    bool // Close ran: a second does nothing
}

// Pull request settings: as nats.go's Next (a request expires after 30 s
// and asks for a heartbeat every 5 s while it waits; two missed mean the
// request is lost, as when its server went away).
const (
	pullExpires   = 30 * time.Second
	pullHeartbeat = 5 * time.Second
)

// pullBuffer bounds what a Puller's subscription holds unread: at most a
// message and a few heartbeats and statuses.
const pullBuffer = 64

// NewPuller subscribes a Puller for the durable consumer on stream. It
// is for one goroutine; Close it when done.
func (b *Bus) NewPuller(stream, consumer string) (*Puller, error) {
	return newPuller(b.nc, stream, consumer, pullHeartbeat)
}

// newPuller is NewPuller on nc; heartbeat is pullHeartbeat but in tests.
func newPuller(nc *nats.Conn, stream, consumer string, heartbeat time.Duration) (*Puller, error) {
	p := &Puller{
		nc:      nc,
		subject: "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer,
		inbox:   nc.NewInbox() + ".",
		msgs:    make(chan *nats.Msg, pullBuffer),
		request: fmt.Appendf(nil, `{"batch":1,"expires":%d,"idle_heartbeat":%d}`, pullExpires.Nanoseconds(), heartbeat.Nanoseconds()),
		beat:    heartbeat,
		timer:   time.NewTimer(time.Hour),
	}
	p.timer.Stop()
	if err := p.subscribe(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Puller) subscribe() error {
	sub, err := p.nc.ChanSubscribe(p.inbox+"*", p.msgs)
	if err != nil {
		return fmt.Errorf("bus: pull (%s): subscribe: %w", p.subject, err)
	}
	// The channel is the bound that matters; nats.go's own pending limits
	// must not drop before it.
	_ = sub.SetPendingLimits(-1, -1)
	p.sub = sub
	return nil
}

// renew withdraws the subscription a request was given up on and makes
// a new one, so that the server, if it still holds that request, finds
// no one to deliver to and keeps its message for another pull: a
// message taken while this Puller's loop runs a handler would wait out
// its AckWait and run twice. A message that came for it in the meantime
// is returned, to run now; a second one (never: a request is for one)
// would be naked.
func (p *Puller) renew() (Pulled, error) {
	p.withdraw()
	var got Pulled
	for drained := false; !drained; {
		select {
		case m := <-p.msgs:
			if isStatus(m) {
				continue
			}
			if got == nil {
				got = pulledMsg{m}
			} else {
				_ = pulledMsg{m}.Nak()
			}
		default:
			drained = true
		}
	}
	p.inbox, p.msgs = p.nc.NewInbox()+".", make(chan *nats.Msg, pullBuffer)
	if err := p.subscribe(); err != nil {
		return got, err
	}
	p.abandoned = false
	return got, nil
}

// isStatus reports whether m is a status message (a heartbeat, a request's
// end), not a stream message.
func isStatus(m *nats.Msg) bool {
	return len(m.Data) == 0 && m.Header != nil && m.Header.Get("Status") != ""
}

// withdraw gives the Puller's subscription up, draining it rather than
// dropping it: the server may have sent a message for a request of this
// Puller before it read the unsubscribe, and a message that found the
// subscription gone would be taken for delivered and wait out its
// AckWait. Draining keeps the subscription until a round trip shows the
// server has read the unsubscribe (at most drainWait), so every such
// message is in p.msgs when withdraw returns, and no more will come.
func (p *Puller) withdraw() {
	closed := p.sub.StatusChanged(nats.SubscriptionClosed)
	if err := p.sub.Drain(); err == nil {
		select {
		case <-closed:
		case <-time.After(drainWait):
			_ = p.sub.Unsubscribe()
		}
	} else {
		_ = p.sub.Unsubscribe()
	}
}

// Close gives the Puller's subscription up (withdraw), and hands back
// (naks) any message that came for a request it no longer waits for.
// Closing again does nothing.
func (p *Puller) Close() {
	if p.closed {
		return
	}
	p.closed = true
	p.withdraw()
	for {
		select {
		case m := <-p.msgs:
			if !isStatus(m) {
				_ = pulledMsg{m}.Nak()
			}
		default:
			return
		}
	}
}

// Next asks for one message and waits for it, or for ctx to end.
// nats.ErrTimeout means the request expired with nothing to deliver,
// jetstream.ErrNoHeartbeat that the server stopped answering it; both
// want another request. A consumer that no longer exists answers
// jetstream.ErrConsumerDeleted (deleted under the request) or
// nats.ErrNoResponders (no such consumer).
func (p *Puller) Next(ctx context.Context) (Pulled, error) {
	if p.abandoned {
		if m, err := p.renew(); m != nil || err != nil {
			return m, err
		}
	}
	p.n++
	reply := p.inbox + strconv.FormatUint(p.n, 10)
	if err := p.nc.PublishRequest(p.subject, reply, p.request); err != nil {
		return nil, err
	}
	p.timer.Reset(2 * p.beat)
	defer p.timer.Stop()
	for {
		select {
		case <-ctx.Done():
			p.abandoned = true
			return nil, ctx.Err()
		case <-p.timer.C:
			p.abandoned = true
			return nil, jetstream.ErrNoHeartbeat
		case m := <-p.msgs:
			if !isStatus(m) {
				return pulledMsg{m}, nil
			}
			if m.Subject != reply {
				continue // about an earlier request, ended
			}
			p.timer.Reset(2 * p.beat)
			if err := pullStatus(m.Header.Get("Status"), m.Header.Get("Description")); err != nil {
				return nil, err
			}
		}
	}
}

// pullStatus is the error a status message answers a pull request with;
// nil for a heartbeat.
func pullStatus(status, description string) error {
	switch status {
	case "100":
		return nil
	case "404", "408":
		return nats.ErrTimeout
	case "503":
		return nats.ErrNoResponders
	case "409":
		d := strings.ToLower(description)
		switch {
		case strings.Contains(d, "consumer deleted"):
			return jetstream.ErrConsumerDeleted
		case strings.Contains(d, "leadership change"):
			return jetstream.ErrConsumerLeadershipChanged
		case strings.Contains(d, "server shutdown"):
			return jetstream.ErrServerShutdown
		}
	}
	return fmt.Errorf("bus: pull request answered %s %s", status, description)
}

// Pulled is a message a Puller got: what its consumers need of a
// jetstream.Msg, which satisfies it too.
type Pulled interface {
	Headers() nats.Header
	Data() []byte
	Subject() string
	Metadata() (*jetstream.MsgMetadata, error)
	Ack() error
	// DoubleAck acks and waits for the server to confirm it.
	DoubleAck(ctx context.Context) error
	Nak() error
	NakWithDelay(delay time.Duration) error
	TermWithReason(reason string) error
	InProgress() error
}

// pulledMsg is a message a puller got; it is acknowledged the way
// jetstream.Msg is, by a message to its reply subject (ADR-15).
type pulledMsg struct{ m *nats.Msg }

func (p pulledMsg) Headers() nats.Header { return p.m.Header }
func (p pulledMsg) Data() []byte         { return p.m.Data }
func (p pulledMsg) Subject() string      { return p.m.Subject }
func (p pulledMsg) Ack() error           { return p.answer("+ACK") }
func (p pulledMsg) Nak() error           { return p.answer("-NAK") }
func (p pulledMsg) InProgress() error    { return p.answer("+WPI") }

func (p pulledMsg) DoubleAck(ctx context.Context) error {
	if p.m.Reply == "" || p.m.Sub == nil {
		return jetstream.ErrMsgNoReply
	}
	return p.m.AckSync(nats.Context(ctx))
}

func (p pulledMsg) NakWithDelay(delay time.Duration) error {
	if delay <= 0 {
		return p.Nak()
	}
	return p.answer(fmt.Sprintf(`-NAK {"delay": %d}`, delay.Nanoseconds()))
}

func (p pulledMsg) TermWithReason(reason string) error {
	if reason == "" {
		return p.answer("+TERM")
	}
	return p.answer("+TERM " + reason)
}

func (p pulledMsg) answer(body string) error {
	if p.m.Reply == "" || p.m.Sub == nil {
		return jetstream.ErrMsgNoReply
	}
	return p.m.Respond([]byte(body))
}

func (p pulledMsg) Metadata() (*jetstream.MsgMetadata, error) {
	md, err := p.m.Metadata()
	if err != nil {
		return nil, err
	}
	return &jetstream.MsgMetadata{
		Sequence:     jetstream.SequencePair{Consumer: md.Sequence.Consumer, Stream: md.Sequence.Stream},
		NumDelivered: md.NumDelivered, NumPending: md.NumPending, Timestamp: md.Timestamp,
		Stream: md.Stream, Consumer: md.Consumer, Domain: md.Domain,
	}, nil
}
