package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/events"
)

// ErrPoison marks a handler error that retrying cannot fix: the message is
// terminated instead of redelivered.
var ErrPoison = errors.New("bus: poison message")

// RetryAfter asks for the delivery to be redelivered after d (a durable
// timer that is not due yet), not counted as a failure.
type RetryAfter struct{ Delay time.Duration }

func (r *RetryAfter) Error() string { return fmt.Sprintf("bus: retry after %s", r.Delay) }

// ErrHandBack marks a handler that gave its message up unfinished (a worker
// shutting down): it is naked for immediate redelivery to another consumer.
var ErrHandBack = errors.New("bus: handed back")

// Delivery is one decoded message from a durable consumer. Its methods are
// safe for concurrent use (InProgress from a heartbeat goroutine while the
// handler runs).
type Delivery struct {
	Envelope events.Envelope
	// Subject is the NATS subject the message was published to.
	Subject string
	// Sequence is the message's stream sequence.
	Sequence uint64
	// Delivered counts deliveries of this message, starting at 1.
	Delivered uint64
	msg       Pulled
	// header is a stored message's headers (StoredDelivery); a consumed
	// one's are msg's.
	header map[string][]string
	// then runs in the handler's goroutine once the delivery is settled
	// (Then).
	then func(ctx context.Context)
	// handed: a message handed over by core NATS (HandedDelivery).
	handed bool
}

// Then has fn run after the handler returns and its delivery is settled
// (acked, naked), in the same goroutine and so in the same one of
// Consume's slots: work the handler got in return for its answer (a step
// handed back with the verdict, bus.HandOffer) runs without a pull, and
// the delivery it follows is not held while it runs.
func (d *Delivery) Then(fn func(ctx context.Context)) { d.then = fn }

// HandedDelivery is a Delivery of a message handed over by core NATS
// (bus.HandOffer) rather than delivered by a consumer: as StoredDelivery,
// InProgress does nothing; DeadLetter copies its envelope.
func HandedDelivery(subject string, env events.Envelope) *Delivery {
	return &Delivery{Envelope: env, Subject: subject, Delivered: 1, handed: true}
}

// Header returns the message's header name as published (the first
// value; "" when absent): one the envelope does not carry, such as
// api.NATSIdempotencyHeader on a submission.
func (d *Delivery) Header(name string) string {
	if d.msg != nil {
		return d.msg.Headers().Get(name)
	}
	return nats.Header(d.header).Get(name)
}

// InProgress tells the server the handler is still working, resetting
// AckWait. A Delivery read from the stream (StoredDelivery) has no
// consumer to tell: nil.
func (d *Delivery) InProgress() error {
	if d.msg == nil {
		return nil
	}
	return d.msg.InProgress()
}

// StoredDelivery is a Delivery of a message read from its stream rather
// than delivered by a consumer (a reconciler starting what a consumer
// holds and will not hand out): InProgress does nothing, and it cannot
// be dead-lettered.
func StoredDelivery(m StoredMessage) *Delivery {
	return &Delivery{Envelope: m.Envelope, Subject: m.Subject, Sequence: m.Sequence, Delivered: 1, header: m.Header}
}

// Handler processes one delivery. Returning nil acks it; an error wrapping
// ErrPoison terminates it; any other error naks it for redelivery after a
// backoff.
type Handler func(ctx context.Context, d *Delivery) error

// ConsumeConfig describes a durable pull consumer and how to run its handler.
type ConsumeConfig struct {
	Stream  string
	Durable string
	Filter  string
	// AckWait is how long a delivery may go without an ack or InProgress
	// before it is redelivered; default 30s.
	AckWait time.Duration
	// MaxDeliver bounds deliveries of one message; default 5 (-1 unlimited).
	MaxDeliver int
	// Concurrency is how many handlers run at once; default 16.
	Concurrency int
	// Backoff is the nak delay before the n-th redelivery; default
	// 100ms·2^(n-1), capped at 5s.
	Backoff func(delivered uint64) time.Duration
	// OnMalformed is told about messages that fail events.Decode; they are
	// terminated. subject and header are as received.
	OnMalformed func(ctx context.Context, subject string, header map[string][]string, err error)
	// ShutdownGrace bounds how long in-flight handlers may run after ctx ends;
	// default 10s.
	ShutdownGrace time.Duration
}

func (c *ConsumeConfig) setDefaults() {
	if c.AckWait == 0 {
		c.AckWait = 30 * time.Second
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = 5
	}
	if c.Concurrency == 0 {
		c.Concurrency = 16
	}
	if c.Backoff == nil {
		c.Backoff = func(n uint64) time.Duration {
			d := 100 * time.Millisecond << min(n-1, 6)
			return min(d, 5*time.Second)
		}
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = 10 * time.Second
	}
}

// Validate reports every problem with the configuration.
func (c ConsumeConfig) Validate() error {
	var errs []error
	if c.Stream == "" || c.Durable == "" {
		errs = append(errs, errors.New("bus: consume needs Stream and Durable"))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("bus: concurrency %d below 1", c.Concurrency))
	}
	if c.AckWait < time.Second {
		errs = append(errs, fmt.Errorf("bus: ack wait %s below 1s", c.AckWait))
	}
	return errors.Join(errs...)
}

// Consume runs h for every message of a durable pull consumer (created or
// updated idempotently, shared by every process that names the same
// Durable) until ctx ends; then it stops fetching, lets in-flight handlers
// finish within ShutdownGrace, and returns nil.
//
// Each of the Concurrency loops pulls one message only when it is free to
// run it, over a subscription of its own (pull.go). Nothing is
// prefetched: a message waiting in a busy process's buffer would sit out
// its AckWait and be redelivered to another process while still queued
// here (run twice), and would idle behind a long step while other
// workers have room.
func (b *Bus) Consume(ctx context.Context, cfg ConsumeConfig, h Handler) error {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	return b.consume(ctx, cfg, h, func() (jetstream.Consumer, error) { return b.ensureConsumer(ctx, cfg) })
}

// consume runs Consume's loop on the consumer ensure creates, and creates
// it again with ensure when it is deleted under the loop.
func (b *Bus) consume(ctx context.Context, cfg ConsumeConfig, h Handler, ensure func() (jetstream.Consumer, error)) error {
	if _, err := ensure(); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
		return err
	}
	// Handlers get a context that outlives ctx by ShutdownGrace, so that a
	// shutdown lets them finish their acks instead of abandoning them.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	var mu sync.Mutex // guards made: the consumer's re-creations
	made := 0
	var wg sync.WaitGroup
	pullers := make([]*Puller, cfg.Concurrency)
	for i := range pullers {
		p, err := newPuller(b.nc, cfg.Stream, cfg.Durable, pullHeartbeat)
		if err != nil {
			for _, p := range pullers[:i] {
				p.Close()
			}
			return err
		}
		pullers[i] = p
	}
	// A stopping loop withdraws its pull requests before any handler may
	// hand its message back (ErrHandBack: when the grace ends, or of its
	// own accord): a message naked while this process still had a request
	// waiting at the server could be delivered to that request, whose
	// subscription was going away, and wait out its AckWait instead of
	// going to another worker at once.
	var (
		pmu      sync.Mutex // guards pulls, stopping
		pulls    int        // requests the loops have outstanding
		stopping bool
		noPulls  = make(chan struct{}) // closed once stopping with none outstanding
	)
	// handingBack runs before a message is handed back (naked for
	// immediate redelivery): once ctx has ended, it waits until the
	// loops' requests are withdrawn.
	handingBack := func() {
		if ctx.Err() == nil {
			return
		}
		select {
		case <-noPulls:
		case <-time.After(drainWait):
		}
	}
	donePull := func() {
		pmu.Lock()
		if pulls--; pulls == 0 && stopping {
			close(noPulls)
		}
		pmu.Unlock()
	}
	for _, p := range pullers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer p.Close()
			for {
				pmu.Lock()
				if stopping || ctx.Err() != nil {
					pmu.Unlock()
					return
				}
				pulls++
				pmu.Unlock()
				mu.Lock()
				seen := made
				mu.Unlock()
				m, err := p.Next(ctx)
				if err != nil && ctx.Err() != nil {
					p.Close() // the server may still hold the request
					donePull()
					return
				}
				donePull()
				if err != nil {
					if errors.Is(err, nats.ErrTimeout) {
						continue
					}
					b.log.Debug("fetch", "consumer", cfg.Durable, "err", err)
					// A consumer (or its stream) deleted and made again
					// answers no responders to pulls on the old one: make
					// it again, once for all the loop's goroutines.
					if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
						errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrStreamNotFound) {
						mu.Lock()
						if made == seen {
							if _, err := ensure(); err == nil {
								made++
							}
						}
						mu.Unlock()
					}
					select {
					case <-ctx.Done():
					case <-time.After(250 * time.Millisecond):
					}
					continue
				}
				b.handle(hctx, cfg, h, m, handingBack)
			}
		}()
	}
	<-ctx.Done()
	pmu.Lock()
	stopping = true
	if pulls == 0 {
		close(noPulls)
	}
	pmu.Unlock()
	waitGrace(&wg, cfg.ShutdownGrace, hcancel)
	return nil
}

// waitGrace waits for wg; past grace it cancels the handlers' context and
// waits for them to return.
func waitGrace(wg *sync.WaitGroup, grace time.Duration, cancel context.CancelFunc) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		cancel()
		<-done
	}
}

// EnsureConsumer creates (or updates) the durable consumer Consume would
// use, so that a caller can make it exist before announcing readiness.
func (b *Bus) EnsureConsumer(ctx context.Context, cfg ConsumeConfig) error {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	_, err := b.ensureConsumer(ctx, cfg)
	return err
}

// consumerMaxAckPending bounds the messages a durable consumer has handed
// out unacknowledged, across every process consuming from it: the steps
// of a capability running at once, the replies being handled. Each
// Consume loop holds at most one, so the loops are the real bound; this
// one only has to stay above them (2,048 processes of 32 loops). It was
// max(4 × Concurrency, 256), set by whichever process made or updated the
// consumer last, which capped a capability at 256 running steps however
// many workers were added (TestConsumeScalesOut). Unlike MaxWaiting it
// can be changed on an existing consumer, so every deployment gets it at
// its next start.
const consumerMaxAckPending = 1 << 16

// consumerMaxWaiting bounds the pull requests a durable consumer holds
// waiting, across every process consuming from it: each idle Consume loop
// keeps one. The server's default, 512, is sixteen processes of 32 loops;
// a pull past it is dropped without an answer (its heartbeats never
// come, and the loop finds out 10 s later), so the loops of a seventeenth
// worker sat out a backlog (TestConsumeScalesPastTheDefaultWaitingPulls).
// A waiting pull costs the server a small record and nothing while it
// waits. The server cannot change MaxWaiting on an existing consumer: one
// made with another value keeps it (maxWaiting).
const consumerMaxWaiting = 1 << 16

// A consumer without a leader for the moment (electing one after a node
// loss) times the request out: it is tried again like a publish
// (election.go), so that a process starting then waits instead of failing.
func (b *Bus) ensureConsumer(ctx context.Context, cfg ConsumeConfig) (jetstream.Consumer, error) {
	var cons jetstream.Consumer
	create := func(ctx context.Context) error {
		waiting, err := b.maxWaiting(ctx, cfg)
		if err != nil {
			return err
		}
		cons, err = b.js.CreateOrUpdateConsumer(ctx, cfg.Stream, jetstream.ConsumerConfig{
			Durable: cfg.Durable, FilterSubject: cfg.Filter, AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: cfg.AckWait, MaxDeliver: cfg.MaxDeliver, MaxAckPending: consumerMaxAckPending,
			MaxWaiting: waiting, DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		return err
	}
	_, err := retryElection(ctx, b.electionWait, func(ctx context.Context) error {
		err := create(ctx)
		if err != nil && strings.Contains(err.Error(), "max waiting") {
			// Made meanwhile by another process with another MaxWaiting
			// (an older agentbus): read again, and keep that one's.
			err = create(ctx)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bus: consumer %s on %s: %w", cfg.Durable, cfg.Stream, err)
	}
	return cons, nil
}

// maxWaiting is the MaxWaiting to make cfg's consumer with:
// consumerMaxWaiting for a new one, the one it has if it exists (the
// server refuses to change it). A consumer an older agentbus made, or an
// agent in another language without the field, keeps the server's
// default of 512 waiting pulls, which is said once a consumer: deleting
// it (with no worker running, or its steps in flight run again) lets the
// next start make it with consumerMaxWaiting.
func (b *Bus) maxWaiting(ctx context.Context, cfg ConsumeConfig) (int, error) {
	c, err := b.js.Consumer(ctx, cfg.Stream, cfg.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return consumerMaxWaiting, nil
	}
	if err != nil {
		return 0, err
	}
	n := c.CachedInfo().Config.MaxWaiting
	if _, said := b.fewWaiting.LoadOrStore(cfg.Durable, true); n < consumerMaxWaiting && !said {
		// Info, not a warning: it matters only past sixteen idle
		// processes of 32 slots, which this process cannot count.
		b.log.Info("a consumer made elsewhere (an older agentbus, an agent in another language) holds at most this many waiting pulls: past that many idle slots (concurrency × processes) the rest wait up to 10 s for steps; delete the consumer while no process uses it to raise it",
			"consumer", cfg.Durable, "stream", cfg.Stream, "max_waiting", n, "new_consumers", consumerMaxWaiting)
	}
	return n, nil
}

// handle runs h for m and answers m by h's error; handingBack runs
// before m is handed back (ErrHandBack).
func (b *Bus) handle(ctx context.Context, cfg ConsumeConfig, h Handler, m Pulled, handingBack func()) {
	env, err := events.Decode(m.Headers(), m.Data())
	if err != nil {
		b.log.Warn("malformed message terminated", "subject", m.Subject(), "consumer", cfg.Durable, "err", err)
		if cfg.OnMalformed != nil {
			cfg.OnMalformed(ctx, m.Subject(), m.Headers(), err)
		}
		_ = m.TermWithReason(err.Error())
		return
	}
	d := &Delivery{Envelope: env, Subject: m.Subject(), msg: m, Delivered: 1}
	if md, err := m.Metadata(); err == nil {
		d.Sequence, d.Delivered = md.Sequence.Stream, md.NumDelivered
	}
	err = b.safeCall(ctx, h, d)
	b.ops.answer()
	var ra *RetryAfter
	switch {
	case errors.As(err, &ra):
		_ = m.NakWithDelay(ra.Delay)
	case err == nil:
		if err := m.Ack(); err != nil {
			b.log.Warn("ack failed", "subject", m.Subject(), "err", err)
		}
	case errors.Is(err, ErrHandBack):
		handingBack()
		b.log.Info("message handed back", "subject", m.Subject(), "delivered", d.Delivered)
		_ = m.Nak()
	case errors.Is(err, ErrPoison):
		b.log.Warn("message terminated", "subject", m.Subject(), "err", err)
		_ = m.TermWithReason(err.Error())
	default:
		b.log.Debug("message naked", "subject", m.Subject(), "delivered", d.Delivered, "err", err)
		_ = m.NakWithDelay(cfg.Backoff(d.Delivered))
	}
	if d.then != nil {
		b.safeCall(ctx, func(ctx context.Context, _ *Delivery) error { d.then(ctx); return nil }, d)
	}
}

// safeCall runs h and turns a panic into an error, so one bad message cannot
// take the process down.
func (b *Bus) safeCall(ctx context.Context, h Handler, d *Delivery) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("bus: handler panic: %v", r)
			b.log.Error("handler panic", "subject", d.Subject, "panic", r)
		}
	}()
	return h(ctx, d)
}

// HasConsumer reports whether a durable consumer exists on a stream.
func (b *Bus) HasConsumer(ctx context.Context, stream, name string) (bool, error) {
	_, err := b.js.Consumer(ctx, stream, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("bus: consumer %s on %s: %w", name, stream, err)
	}
	return true, nil
}

// Header names on dead-lettered messages.
const (
	HeaderDeadLetterReason  = "Agentbus-Deadletter-Reason"
	HeaderDeadLetterCount   = "Agentbus-Deadletter-Deliveries"
	HeaderDeadLetterBy      = "Agentbus-Deadletter-By"
	HeaderDeadLetterSubject = "Agentbus-Deadletter-Subject"
)

// DeadLetter copies the delivery, headers and body unchanged, to subject
// with the reason, the delivery count and who gave up in headers. The
// publish is deduplicated on the original stream sequence. The caller then
// acks the delivery.
func (b *Bus) DeadLetter(ctx context.Context, d *Delivery, subject, reason, by string) error {
	var m *nats.Msg
	switch {
	case d.msg != nil:
		m = nats.NewMsg(subject)
		for k, v := range d.msg.Headers() {
			m.Header[k] = append([]string(nil), v...)
		}
		m.Data = d.msg.Data()
	case d.handed:
		var err error
		if m, err = toMsg(subject, d.Envelope); err != nil {
			return fmt.Errorf("bus: dead-letter to %s: %w", subject, err)
		}
	default:
		return fmt.Errorf("bus: dead-letter to %s: a stored delivery has no message to copy", subject)
	}
	m.Header.Set(HeaderDeadLetterReason, reason)
	m.Header.Set(HeaderDeadLetterCount, strconv.FormatUint(d.Delivered, 10))
	m.Header.Set(HeaderDeadLetterBy, by)
	m.Header.Set(HeaderDeadLetterSubject, d.Subject)
	if _, err := b.js.PublishMsg(ctx, m, jetstream.WithMsgID(deadLetterID(d))); err != nil {
		return fmt.Errorf("bus: dead-letter to %s: %w", subject, err)
	}
	return nil
}

// deadLetterID is a dead letter's dedup key: the original's stream
// sequence, or a handed message's own id (it has no sequence).
func deadLetterID(d *Delivery) string {
	if d.handed {
		return "deadletter/" + d.Envelope.ID
	}
	return fmt.Sprintf("deadletter/%s/%d", d.Subject, d.Sequence)
}

// KeepInProgress sends an in-progress ack every interval (at least 100ms)
// until the returned stop is called or ctx ends, so that a long handler
// keeps its delivery past AckWait. Call it with AckWait/3.
func (d *Delivery) KeepInProgress(ctx context.Context, interval time.Duration) (stop func()) {
	hb, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(max(interval, 100*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-hb.Done():
				return
			case <-t.C:
				_ = d.InProgress()
			}
		}
	}()
	return cancel
}
