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

	"github.com/agentbus/agentbus/events"
)

// ErrNotTaken is returned by Hand when the handler that got the message
// refused it or failed: the sender falls back to the durable way.
var ErrNotTaken = errors.New("bus: not taken")

// takenOK is the answer to a message taken; anything else starts with
// takenErr and says why it was not.
const (
	takenOK  = "+OK"
	takenErr = "-ERR "
)

// Hand sends env to subject as a core NATS request and waits, until ctx
// ends, for the verdict of the Take handler that got it. It returns nil
// only once that handler returned nil; no handler listening is
// ErrNoResponder at once, a refusal or failure is ErrNotTaken with the
// handler's reason. Nothing stores the message: a sender that gets an
// error must deliver it another way, and that other way must tolerate a
// copy the handler took after the sender stopped waiting.
func (b *Bus) Hand(ctx context.Context, subject string, env events.Envelope) error {
	_, err := b.HandOffer(ctx, subject, env, Offer{})
	return err
}

// HeaderOffer, on a handed message, names what its sender offers to take
// in return with the verdict: a step of that capability (agents: a slot
// just freed). A handler that has one answers with it (Handed.Offer).
const HeaderOffer = "Agentbus-Offer"

// Offer is what a sender of HandOffer offers to take back.
type Offer struct {
	// Capability names it (HeaderOffer): a step of that capability. None
	// if "".
	Capability string
	// Lease is how long the sender may go without a word while it runs
	// what it took back (headerOfferLease): it speaks at least three
	// times in that span (agents: its AckWait, renewed every third).
	// Zero: it does not say.
	Lease time.Duration
}

// HandOffer is Hand with an offer (none if offer.Capability is ""): with
// the verdict, the handler may send back a message for the sender to
// take, which HandOffer returns (nil if none). That message is the
// sender's from then on: nothing else holds it.
func (b *Bus) HandOffer(ctx context.Context, subject string, env events.Envelope, offer Offer) (*events.Envelope, error) {
	m, err := toMsg(subject, env)
	if err != nil {
		return nil, err
	}
	if offer.Capability != "" {
		m.Header.Set(HeaderOffer, offer.Capability)
		if dl, ok := ctx.Deadline(); ok {
			m.Header.Set(headerOfferUntil, strconv.FormatInt(dl.UnixMilli(), 10))
		}
		if offer.Lease > 0 {
			m.Header.Set(headerOfferLease, strconv.FormatInt(offer.Lease.Milliseconds(), 10))
		}
	}
	resp, err := b.nc.RequestMsgWithContext(ctx, m)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("%w on %s", ErrNoResponder, subject)
	case err != nil:
		return nil, fmt.Errorf("bus: hand %s: %w", subject, err)
	}
	if resp.Header.Get(headerTaken) == takenOK {
		// Taken, with a message in return.
		back, err := events.Decode(resp.Header, resp.Data)
		if err != nil {
			// The answer was recorded; only what came back is lost to the
			// sender, and its sender's lease recovers it.
			b.log.Warn("message handed back with a verdict does not decode", "subject", subject, "err", err)
			return nil, nil
		}
		return &back, nil
	}
	if s := string(resp.Data); s != takenOK {
		return nil, fmt.Errorf("%w on %s: %s", ErrNotTaken, subject, strings.TrimPrefix(s, takenErr))
	}
	return nil, nil
}

// headerOfferUntil is when the sender of an offer stops waiting for the
// verdict (unix milliseconds): a message sent back after that is not
// taken.
const headerOfferUntil = "Agentbus-Offer-Until"

// headerOfferLease is Offer.Lease in milliseconds.
const headerOfferLease = "Agentbus-Offer-Lease"

// headerTaken carries the verdict on an answer that brings a message back
// in its body.
const headerTaken = "Agentbus-Taken"

// Handed is a message Take got.
type Handed struct {
	Subject string
	Env     events.Envelope
	// Offer is what its sender offered to take back (HeaderOffer),
	// OfferUntil when it stops waiting for the verdict (zero: unknown),
	// and OfferLease how long it may go without a word while it runs what
	// it took (Offer.Lease; zero: unknown).
	Offer      string
	OfferUntil time.Time
	OfferLease time.Duration
}

func handed(m *nats.Msg, env events.Envelope) Handed {
	h := Handed{Subject: m.Subject, Env: env, Offer: m.Header.Get(HeaderOffer)}
	if ms, err := strconv.ParseInt(m.Header.Get(headerOfferUntil), 10, 64); err == nil {
		h.OfferUntil = time.UnixMilli(ms)
	}
	if ms, err := strconv.ParseInt(m.Header.Get(headerOfferLease), 10, 64); err == nil && ms > 0 {
		h.OfferLease = time.Duration(ms) * time.Millisecond
	}
	return h
}

// TakeConfig says where Take listens.
type TakeConfig struct {
	// Subject is the subject, wildcards allowed.
	Subject string
	// Queue is the queue group: one member gets each message.
	Queue string
	// Concurrency is how many messages are handled at once (default 1);
	// past it the subscription waits, and senders that stop waiting send
	// the durable way.
	Concurrency int
	// ShutdownGrace bounds how long running handlers may go on after
	// Take's context ends, as ConsumeConfig's does; default 10s.
	ShutdownGrace time.Duration
	// Timeout bounds one handler's run, long after its sender has
	// stopped waiting and sent the durable way; default 30s.
	Timeout time.Duration
}

// drainWait bounds how long a stopping Take answers what it still holds.
const drainWait = time.Second

// takerIdle is how long a goroutine of Take that handled a message waits
// for the next before it ends.
const takerIdle = 10 * time.Second

// Take handles every message Hand sends on cfg.Subject until ctx ends,
// and answers each with h's verdict. h gets a context that outlives ctx by
// cfg.ShutdownGrace, so that a shutdown lets it finish what it started. A
// message that does not decode is refused with the reason, as is one that
// arrives while Take stops. Take returns once the messages it started have
// been answered.
func (b *Bus) Take(ctx context.Context, cfg TakeConfig, h func(ctx context.Context, subject string, env events.Envelope) error) error {
	return b.TakeOffers(ctx, cfg, func(ctx context.Context, m Handed) (*events.Envelope, error) {
		return nil, h(ctx, m.Subject, m.Env)
	})
}

// TakeOffers is Take for a handler that may answer a message's offer: a
// message it returns with a nil error goes back to the sender with the
// verdict (HandOffer returns it).
func (b *Bus) TakeOffers(ctx context.Context, cfg TakeConfig, h func(ctx context.Context, m Handed) (*events.Envelope, error)) error {
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 10 * time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()
	slots := make(chan struct{}, max(cfg.Concurrency, 1))
	var (
		running sync.WaitGroup
		mu      sync.Mutex // guards stopped, after which nothing joins running
		stopped bool
	)
	answer := func(m *nats.Msg, back *events.Envelope, err error) {
		out := takenOK
		if err != nil {
			out = takenErr + err.Error()
		}
		var rerr error
		if back != nil && err == nil {
			r, terr := toMsg(m.Reply, *back)
			if terr == nil {
				r.Header.Set(headerTaken, takenOK)
				rerr = m.RespondMsg(r)
			} else {
				rerr = m.Respond([]byte(out))
			}
		} else {
			rerr = m.Respond([]byte(out))
		}
		if rerr != nil {
			b.log.Debug("answer to a handed message not sent", "subject", m.Subject, "err", rerr)
		}
	}
	one := func(m *nats.Msg) {
		defer running.Done()
		defer func() { <-slots }()
		env, err := events.Decode(m.Header, m.Data)
		var back *events.Envelope
		if err == nil {
			ctx, cancel := context.WithTimeout(hctx, cfg.Timeout)
			back, err = h(ctx, handed(m, env))
			cancel()
		}
		answer(m, back, err)
	}
	// A message is handled by a taker goroutine that stays for the next
	// one until it has been idle for takerIdle: a goroutine a message
	// started each with a small stack and grew it, copying it several
	// times, on the way down the handler (3 % of an orchestrator's CPU
	// at 16 workflows in flight). At most cfg.Concurrency run, as the
	// slots bound the messages in hand.
	work, quit := make(chan *nats.Msg), make(chan struct{})
	take := func(m *nats.Msg) {
		idle := time.NewTimer(takerIdle)
		defer idle.Stop()
		for {
			one(m)
			idle.Reset(takerIdle)
			select {
			case m = <-work:
			case <-idle.C:
				return
			case <-quit:
				return
			}
		}
	}
	sub, err := b.nc.QueueSubscribe(cfg.Subject, cfg.Queue, func(m *nats.Msg) {
		if m.Reply == "" {
			return // a plain publish: nobody waits, so nothing may rely on it
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			answer(m, nil, errors.New("stopping"))
			return
		}
		mu.Lock()
		if stopped {
			mu.Unlock()
			<-slots
			answer(m, nil, errors.New("stopping"))
			return
		}
		running.Add(1)
		mu.Unlock()
		select {
		case work <- m: // an idle taker has it
		default:
			go take(m)
		}
	})
	if err != nil {
		return fmt.Errorf("bus: subscribe %s: %w", cfg.Subject, err)
	}
	defer close(quit)
	closed := sub.StatusChanged(nats.SubscriptionClosed)
	<-ctx.Done()
	// Drained, not dropped: a message already here is answered (refused)
	// at once rather than left for its sender to wait out.
	if err := sub.Drain(); err == nil {
		select {
		case <-closed:
		case <-time.After(drainWait):
		}
	}
	mu.Lock()
	stopped = true
	mu.Unlock()
	waitGrace(&running, cfg.ShutdownGrace, hcancel)
	return nil
}
