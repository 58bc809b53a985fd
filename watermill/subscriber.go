package watermill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// Metadata keys every message carries.
const (
	MetaOffset   = "agentbus_offset"   // the event's offset (stream sequence)
	MetaEpoch    = "agentbus_epoch"    // the events stream's epoch
	MetaType     = "agentbus_type"     // the short type: status, progress, artifact, complete …
	MetaCEType   = "ce_type"           // the CloudEvent type, io.agentbus.workflow.….v1
	MetaTenant   = "agentbus_tenant"   // the tenant
	MetaWorkflow = "agentbus_workflow" // the workflow id
	MetaStep     = "agentbus_step"     // the step id, if any
	MetaTime     = "agentbus_time"     // the event's time, RFC 3339 with nanoseconds
)

// Sentinel errors.
var (
	// ErrConfig: the SubscriberConfig is not usable.
	ErrConfig = errors.New("watermill: invalid config")
	// ErrClosed: the subscriber or publisher was closed.
	ErrClosed = errors.New("watermill: closed")
)

// SubscriberConfig configures a Subscriber. Bus is required; the zero
// value of every other field means its default.
type SubscriberConfig struct {
	Bus *bus.Bus
	// ConsumerGroup names the durable cursor: subscribers of one group and
	// tenant share it (each event goes to one of them), other groups have
	// their own. Default "watermill"; a subject token.
	ConsumerGroup string
	// AckWait is how long a message may go unacked before it is sent
	// again; default 30s.
	AckWait time.Duration
	// NackDelay is how long a nacked message waits before it is sent
	// again; default 100ms.
	NackDelay time.Duration
	// CloseTimeout is how long, once its subscription ends, a message in
	// hand may still be acked (a router stopping gracefully); default 30s.
	CloseTimeout time.Duration
	// InFlight is how many messages a subscription may have handed over
	// and not yet had acked or nacked. 1 (the default) hands the next
	// over only once the previous is acked or nacked, and the group's
	// consumer holds one unacked event at a time: strict order, across
	// nacks and across the group's subscribers, at one round trip per
	// event. Above 1 (the windowed mode) a subscription hands events
	// over as they come, up to InFlight unacked ones: still oldest first
	// on its channel, but a handler may get the next before it acked the
	// previous, acks may come in any order, and a nacked event comes
	// again after NackDelay behind those already handed over (so do
	// events a subscriber closed with in hand, and those of a group's
	// several subscribers interleave). Subscribers of one group should
	// agree on it: the group's consumer takes the latest one's.
	InFlight int
	// Logger logs; default none.
	Logger wm.LoggerAdapter
}

// maxInFlight bounds SubscriberConfig.InFlight.
const maxInFlight = 10_000

func (c *SubscriberConfig) setDefaults() {
	c.ConsumerGroup = cmp.Or(c.ConsumerGroup, "watermill")
	c.AckWait = cmp.Or(c.AckWait, 30*time.Second)
	c.NackDelay = cmp.Or(c.NackDelay, 100*time.Millisecond)
	c.CloseTimeout = cmp.Or(c.CloseTimeout, 30*time.Second)
	c.InFlight = cmp.Or(c.InFlight, 1)
	if c.Logger == nil {
		c.Logger = wm.NopLogger{}
	}
}

// Validate reports every problem with the configuration.
func (c SubscriberConfig) Validate() error {
	var errs []error
	if c.Bus == nil {
		errs = append(errs, fmt.Errorf("%w: Bus is required", ErrConfig))
	}
	if err := subjects.ValidWorkflow(c.ConsumerGroup); err != nil {
		errs = append(errs, fmt.Errorf("%w: ConsumerGroup: %w", ErrConfig, err))
	}
	if c.AckWait < time.Second {
		errs = append(errs, fmt.Errorf("%w: AckWait %s below 1s", ErrConfig, c.AckWait))
	}
	if c.InFlight < 1 || c.InFlight > maxInFlight {
		errs = append(errs, fmt.Errorf("%w: InFlight %d outside 1–%d", ErrConfig, c.InFlight, maxInFlight))
	}
	return errors.Join(errs...)
}

// Subscriber yields a tenant's workflow events as Watermill messages. It
// is safe for concurrent use.
type Subscriber struct {
	cfg    SubscriberConfig
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	stop   chan struct{}
}

var _ message.Subscriber = (*Subscriber)(nil)

// NewSubscriber checks cfg and makes a Subscriber.
func NewSubscriber(cfg SubscriberConfig) (*Subscriber, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Subscriber{cfg: cfg, stop: make(chan struct{})}, nil
}

// Durable is the name of the durable consumer the subscriber reads a
// tenant's events with.
func (s *Subscriber) Durable(tenant string) string { return "wm-" + s.cfg.ConsumerGroup + "-" + tenant }

// Subscribe yields every event of the tenant's workflows (topic is the
// tenant id), oldest first, one at a time: the next comes once the
// previous is acked; a nacked one comes again after NackDelay. (With
// InFlight above 1, up to InFlight at a time: see SubscriberConfig.) The
// message's UUID is the event's CloudEvent id, its payload the event's
// data (JSON), its metadata the Meta… keys; a custom event (one a
// Publisher added) gives back the payload and metadata it was published
// with, beside the Meta… keys. The channel closes when ctx ends or the
// subscriber is closed; a message in hand that is neither acked nor
// nacked within CloseTimeout then comes again to the group's next
// subscriber.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if err := subjects.ValidTenant(topic); err != nil {
		return nil, fmt.Errorf("watermill: topic must be a tenant id: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	filter, _ := subjects.TenantEvents(topic)
	js := s.cfg.Bus.JetStream()
	cons, err := js.CreateOrUpdateConsumer(ctx, subjects.StreamEvents, jetstream.ConsumerConfig{
		Durable: s.Durable(topic), FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: s.cfg.AckWait, MaxDeliver: -1, MaxAckPending: s.cfg.InFlight, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("watermill: consumer %s: %w", s.Durable(topic), err)
	}
	epoch, err := s.cfg.Bus.Epoch(ctx)
	if err != nil {
		return nil, fmt.Errorf("watermill: %w", err)
	}
	out := make(chan *message.Message)
	ctx, cancel := context.WithCancel(ctx)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(out)
		defer cancel()
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if s.cfg.InFlight > 1 {
			s.runWindow(ctx, cons, epoch, out)
			return
		}
		s.run(ctx, s.Durable(topic), epoch, out)
	}()
	return out, nil
}

// run pulls one event at a time and hands it over until ctx ends, over a
// subscription of its own (bus.Puller): nats.go's Fetch would subscribe
// to a new inbox for every event (BenchmarkSubscriber: 17,800 – 21,900
// events/s that way; the README says what this does).
func (s *Subscriber) run(ctx context.Context, durable, epoch string, out chan<- *message.Message) {
	p, err := s.cfg.Bus.NewPuller(subjects.StreamEvents, durable)
	if err != nil {
		s.cfg.Logger.Error("subscribe failed", err, nil)
		return
	}
	defer p.Close()
	for ctx.Err() == nil {
		m, err := p.Next(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, nats.ErrTimeout) {
				s.cfg.Logger.Error("fetch failed", err, nil)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		s.deliver(ctx, m, epoch, out)
	}
}

// windowHeartbeat is how often the server tells a windowed subscription
// it still holds its pull request, when no event comes: a subscription
// that misses two pulls again (as the event log's followers do, bus).
const windowHeartbeat = 2 * time.Second

// runWindow is run for InFlight above 1: the consumer pushes up to
// InFlight unacked events, which its callback hands over in the order they
// come without waiting for acks; each handed-over message is settled
// (acked, nacked, or given up at close) by a goroutine of its own. It
// returns once every message in hand is settled.
func (s *Subscriber) runWindow(ctx context.Context, cons jetstream.Consumer, epoch string, out chan<- *message.Message) {
	var inHand sync.WaitGroup
	var mu sync.Mutex // held while handing over: out closes after runWindow
	over := false
	handOver := func(m jetstream.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if over || ctx.Err() != nil {
			// Taken from the consumer, never handed over (the consumer
			// drains its buffer here): the next subscriber of the group
			// gets it now, not after AckWait.
			_ = m.Nak()
			return
		}
		msg, seq, ok := s.prepare(m, epoch)
		if !ok {
			return
		}
		msgCtx, cancel := context.WithCancel(ctx)
		msg.SetContext(msgCtx)
		select {
		case out <- msg:
		case <-ctx.Done():
			cancel()
			_ = m.Nak()
			return
		}
		inHand.Add(1)
		go func() {
			defer inHand.Done()
			defer cancel()
			s.settle(ctx, m, msg, seq, false)
		}()
	}
	// The callback runs on the consumer's own goroutine, one event at a
	// time: no hand-off to another goroutine before the channel's.
	//
	// The heartbeat is short (windowHeartbeat): once in a while, on a
	// busy machine, nothing was delivered with events pending and room in
	// the window, until nats.go missed two heartbeats and pulled again —
	// it and the server seemed to disagree about an open pull; why is not
	// understood. At nats.go's default (half the 30 s expiry) that took
	// 30 s, as long as the default AckWait, so the events in hand came a
	// second time though never nacked (TestWindowedSubscriberOrder failed
	// so within about 40 runs beside two busy loops; with 2 s, not in 300).
	cc, err := cons.Consume(handOver, jetstream.PullMaxMessages(s.cfg.InFlight), jetstream.PullHeartbeat(windowHeartbeat),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if ctx.Err() == nil {
				s.cfg.Logger.Debug("consumer", wm.LogFields{"err": err})
			}
		}))
	if err != nil {
		s.cfg.Logger.Error("consume failed", err, nil)
		return
	}
	<-ctx.Done()
	cc.Drain()
	<-cc.Closed()
	mu.Lock()
	over = true
	mu.Unlock()
	inHand.Wait()
	_ = s.cfg.Bus.Conn().Flush() // the acks and naks, before Close returns
}

// deliver hands one event over until it is acked (ack it), nacked (send
// it again later) or ctx ends (leave it to AckWait).
func (s *Subscriber) deliver(ctx context.Context, m bus.Pulled, epoch string, out chan<- *message.Message) {
	msg, seq, ok := s.prepare(m, epoch)
	if !ok {
		return
	}
	msgCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	msg.SetContext(msgCtx)
	select {
	case out <- msg:
	case <-ctx.Done():
		// Never handed over: the next subscriber of the group gets it
		// now, not after AckWait.
		_ = m.Nak()
		return
	}
	s.settle(ctx, m, msg, seq, true)
}

// prepare makes an event's message, or terminates a malformed event (ok
// false): it would never decode on any later delivery either.
func (s *Subscriber) prepare(m bus.Pulled, epoch string) (msg *message.Message, seq uint64, ok bool) {
	env, err := events.Decode(m.Headers(), m.Data())
	if err != nil {
		s.cfg.Logger.Error("malformed event skipped", err, wm.LogFields{"subject": m.Subject()})
		_ = m.TermWithReason(err.Error())
		return nil, 0, false
	}
	if md, err := m.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	msg, err = toMessage(env)
	if err != nil {
		s.cfg.Logger.Error("malformed custom event skipped", err, wm.LogFields{"subject": m.Subject()})
		_ = m.TermWithReason(err.Error())
		return nil, 0, false
	}
	md := msg.Metadata
	md[MetaOffset], md[MetaEpoch], md[MetaType], md[MetaCEType] = strconv.FormatUint(seq, 10), epoch, env.Type.Short(), string(env.Type)
	md[MetaTenant], md[MetaWorkflow], md[MetaStep], md[MetaTime] = env.TenantID, env.WorkflowID, env.StepID, env.Time.Format(time.RFC3339Nano)
	return msg, seq, true
}

// settle waits for a handed-over message to be acked (ack it: confirmed
// by the server when confirm, as the one-at-a-time mode needs before it
// asks for the next; else sent, and flushed when the subscription ends),
// nacked (send it again after NackDelay), or, once ctx has ended, for
// CloseTimeout (send it again at once).
func (s *Subscriber) settle(ctx context.Context, m bus.Pulled, msg *message.Message, seq uint64, confirm bool) {
	// Closing lets the message in hand be acked within CloseTimeout: a
	// router that stops gracefully finishes it, so it is not sent again.
	var late <-chan time.Time
	for {
		select {
		case <-msg.Acked():
			if !confirm {
				if err := m.Ack(); err != nil {
					s.cfg.Logger.Error("ack failed", err, wm.LogFields{"offset": seq})
				}
				return
			}
			actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := m.DoubleAck(actx); err != nil {
				s.cfg.Logger.Error("ack failed", err, wm.LogFields{"offset": seq})
			}
			acancel()
			return
		case <-msg.Nacked():
			_ = m.NakWithDelay(s.cfg.NackDelay)
			return
		case <-late:
			_ = m.Nak() // unfinished: it comes again, first
			return
		case <-ctx.Done():
			if late == nil {
				late = time.After(s.cfg.CloseTimeout)
			}
			ctx = context.WithoutCancel(ctx)
		}
	}
}

// metaKeys is how many Meta… keys every message carries.
const metaKeys = 8

// toMessage makes an event's message: a custom event gives back the
// payload and metadata it was published with, any other event its data.
func toMessage(env events.Envelope) (*message.Message, error) {
	if env.Type != events.TypeCustom {
		msg := message.NewMessage(env.ID, message.Payload(env.Data))
		msg.Metadata = make(message.Metadata, metaKeys)
		return msg, nil
	}
	var c events.Custom
	if err := env.Unmarshal(&c); err != nil {
		return nil, err
	}
	msg := message.NewMessage(env.ID, message.Payload(c.Bytes()))
	msg.Metadata = make(message.Metadata, metaKeys+len(c.Metadata))
	maps.Copy(msg.Metadata, c.Metadata)
	return msg, nil
}

// Close ends every subscription, closing their channels, and waits for
// them; safe to call twice.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}
