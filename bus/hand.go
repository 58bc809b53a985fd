package bus

import (
	"context"
	"errors"
	"fmt"
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
	m, err := toMsg(subject, env)
	if err != nil {
		return err
	}
	resp, err := b.nc.RequestMsgWithContext(ctx, m)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("%w on %s", ErrNoResponder, subject)
	case err != nil:
		return fmt.Errorf("bus: hand %s: %w", subject, err)
	}
	if s := string(resp.Data); s != takenOK {
		return fmt.Errorf("%w on %s: %s", ErrNotTaken, subject, strings.TrimPrefix(s, takenErr))
	}
	return nil
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

// Take handles every message Hand sends on cfg.Subject until ctx ends,
// and answers each with h's verdict. h gets a context that outlives ctx by
// cfg.ShutdownGrace, so that a shutdown lets it finish what it started. A
// message that does not decode is refused with the reason, as is one that
// arrives while Take stops. Take returns once the messages it started have
// been answered.
func (b *Bus) Take(ctx context.Context, cfg TakeConfig, h func(ctx context.Context, subject string, env events.Envelope) error) error {
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
	answer := func(m *nats.Msg, err error) {
		out := takenOK
		if err != nil {
			out = takenErr + err.Error()
		}
		if rerr := m.Respond([]byte(out)); rerr != nil {
			b.log.Debug("answer to a handed message not sent", "subject", m.Subject, "err", rerr)
		}
	}
	sub, err := b.nc.QueueSubscribe(cfg.Subject, cfg.Queue, func(m *nats.Msg) {
		if m.Reply == "" {
			return // a plain publish: nobody waits, so nothing may rely on it
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			answer(m, errors.New("stopping"))
			return
		}
		mu.Lock()
		if stopped {
			mu.Unlock()
			<-slots
			answer(m, errors.New("stopping"))
			return
		}
		running.Add(1)
		mu.Unlock()
		go func() {
			defer running.Done()
			defer func() { <-slots }()
			env, err := events.Decode(m.Header, m.Data)
			if err == nil {
				ctx, cancel := context.WithTimeout(hctx, cfg.Timeout)
				err = h(ctx, m.Subject, env)
				cancel()
			}
			answer(m, err)
		}()
	})
	if err != nil {
		return fmt.Errorf("bus: subscribe %s: %w", cfg.Subject, err)
	}
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
