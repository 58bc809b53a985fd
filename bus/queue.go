package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/subjects"
)

// Flow control's look-ups and the queue where steps wait for admission
// (subjects.StreamQueue): how busy a capability's workers are, how many
// steps of each tenant and priority wait, and taking one waiting step.

// QueueStream is subjects.StreamQueue's configuration.
func QueueStream(replicas int, duplicates time.Duration) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name: subjects.StreamQueue, Description: "agentbus flow control: steps waiting for admission to a busy capability",
		Subjects: []string{subjects.AllQueued}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: duplicates, Replicas: replicas,
	}
}

// EnsureQueue creates subjects.StreamQueue if it does not exist, with the
// replicas and dedup window of subjects.StreamReplies (as EnsureTimers
// does for the timers).
func (b *Bus) EnsureQueue(ctx context.Context) error {
	var s jetstream.Stream
	_, err := retryElection(ctx, b.electionWait, func(ctx context.Context) (err error) {
		s, err = b.js.Stream(ctx, subjects.StreamQueue)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil
		}
		return err
	})
	if err == nil && s == nil {
		err = jetstream.ErrStreamNotFound
	}
	if err == nil {
		if have := s.CachedInfo().Config; have.Retention != jetstream.WorkQueuePolicy {
			return &IncompatibleError{Kind: "stream", Name: subjects.StreamQueue,
				Differences: []string{fmt.Sprintf("retention is %v, want %v", have.Retention, jetstream.WorkQueuePolicy)}}
		}
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("bus: stream %s: %w", subjects.StreamQueue, err)
	}
	var ref jetstream.Stream
	_, err = retryElection(ctx, b.electionWait, func(ctx context.Context) (err error) {
		ref, err = b.js.Stream(ctx, subjects.StreamReplies)
		return err
	})
	if err != nil {
		return fmt.Errorf("bus: stream %s (to size %s): %w", subjects.StreamReplies, subjects.StreamQueue, err)
	}
	c := ref.CachedInfo().Config
	_, err = retryElection(ctx, b.electionWait, func(ctx context.Context) error {
		_, err := b.js.CreateStream(ctx, QueueStream(c.Replicas, c.Duplicates))
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("bus: create stream %s: %w", subjects.StreamQueue, err)
	}
	return nil
}

// Load is a capability's step consumer at a glance.
type Load struct {
	// Pending counts requests stored and not yet delivered to a worker.
	Pending uint64
	// Running counts requests delivered and not yet acknowledged.
	Running int
	// Idle counts the workers' pull requests waiting for a message.
	Idle int
}

// Slots is how many steps the capability's workers take at once, as far as
// the consumer can tell: those running and those idle.
func (l Load) Slots() int { return l.Running + l.Idle }

// CapabilityLoad reads a capability's step consumer; a capability no
// worker has bound to yet has a zero Load and ErrNotFound.
func (b *Bus) CapabilityLoad(ctx context.Context, capability string) (Load, error) {
	b.ops.lookup()
	name, err := subjects.StepConsumer(capability)
	if err != nil {
		return Load{}, err
	}
	c, err := b.js.Consumer(ctx, subjects.StreamSteps, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return Load{}, fmt.Errorf("%w: consumer %s", ErrNotFound, name)
	}
	if err != nil {
		return Load{}, fmt.Errorf("bus: consumer %s: %w", name, err)
	}
	info := c.CachedInfo()
	return Load{Pending: info.NumPending, Running: info.NumAckPending, Idle: info.NumWaiting}, nil
}

// Waiting is a count of queued steps by tenant, capability and priority.
type Waiting struct {
	Tenant, Capability string
	Priority           int
	Count              uint64
}

// QueuedSteps counts the steps waiting in subjects.StreamQueue whose
// subject matches filter (subjects.AllQueued, or subjects.QueueFilter of a
// capability), by tenant, capability and priority.
func (b *Bus) QueuedSteps(ctx context.Context, filter string) ([]Waiting, error) {
	b.ops.lookup()
	s, err := b.js.Stream(ctx, subjects.StreamQueue)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", subjects.StreamQueue, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", subjects.StreamQueue, err)
	}
	out := make([]Waiting, 0, len(info.State.Subjects))
	for subj, n := range info.State.Subjects {
		tenant, capability, prio, err := subjects.ParseQueue(subj)
		if err != nil || n == 0 {
			continue
		}
		out = append(out, Waiting{Tenant: tenant, Capability: capability, Priority: prio, Count: n})
	}
	return out, nil
}

// QueuedStep is one step request taken from its queue: Admit sends it on
// to its step subject; Nak leaves it for later.
type QueuedStep struct {
	Tenant, Capability string
	Priority           int
	// MsgID is the request's dedup key (events.StepKey), kept on the step
	// subject; At is when it was queued.
	MsgID string
	At    time.Time
	msg   jetstream.Msg
}

// Nak leaves the step in its queue for another try after delay.
func (q *QueuedStep) Nak(delay time.Duration) error { return q.msg.NakWithDelay(delay) }

// Admit publishes queued step requests — headers, data and dedup key as
// they are — on their step subjects, where the capabilities' workers take
// them, waiting once for all the acknowledgements, then removes each one
// stored from its queue; one not stored is left for another try. Were a
// queue's ack lost, the request comes round again and its second publish
// is a duplicate the step stream drops.
func (b *Bus) Admit(ctx context.Context, qs []*QueuedStep) error {
	if len(qs) == 0 {
		return nil
	}
	b.ops.publish(len(qs))
	futures := make([]jetstream.PubAckFuture, len(qs))
	var errs []error
	for i, q := range qs {
		subj, err := subjects.Step(q.Tenant, q.Capability)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m := &nats.Msg{Subject: subj, Header: nats.Header{}, Data: q.msg.Data()}
		for k, v := range q.msg.Headers() {
			m.Header[k] = v
		}
		if futures[i], err = b.js.PublishMsgAsync(m); err != nil {
			errs = append(errs, fmt.Errorf("bus: admit %s: %w", q.MsgID, err))
		}
	}
	for i, f := range futures {
		if f == nil {
			_ = qs[i].Nak(time.Second)
			continue
		}
		select {
		case <-f.Ok():
			_ = qs[i].msg.Ack()
		case err := <-f.Err():
			_ = qs[i].Nak(time.Second)
			errs = append(errs, fmt.Errorf("bus: admit %s: %w", qs[i].MsgID, err))
		case <-ctx.Done():
			_ = qs[i].Nak(time.Second)
			errs = append(errs, ctx.Err())
		}
	}
	return errors.Join(errs...)
}

// TakeQueued takes up to n of the oldest step requests waiting on one
// tenant's queue of a capability at a priority, through that queue's
// durable consumer (made on first use); ErrNotFound when none waits.
func (b *Bus) TakeQueued(ctx context.Context, tenant, capability string, priority, n int, ackWait time.Duration) ([]*QueuedStep, error) {
	subj, err := subjects.Queue(tenant, capability, priority)
	if err != nil {
		return nil, err
	}
	name, _ := subjects.QueueConsumer(tenant, capability, priority)
	if c, ok := b.queues.Load(name); ok {
		qs, err := take(c.(jetstream.Consumer), subj, n)
		if err == nil || errors.Is(err, ErrNotFound) {
			return qs, err
		}
		b.queues.Delete(name) // deleted under us (an inactive one): made again
	}
	var cons jetstream.Consumer
	_, err = retryElection(ctx, b.electionWait, func(ctx context.Context) (err error) {
		cons, err = b.js.CreateOrUpdateConsumer(ctx, subjects.StreamQueue, jetstream.ConsumerConfig{
			Durable: name, FilterSubject: subj, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait,
			MaxDeliver: -1, MaxAckPending: 1024, DeliverPolicy: jetstream.DeliverAllPolicy,
			InactiveThreshold: time.Hour,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bus: consumer %s: %w", name, err)
	}
	b.queues.Store(name, cons)
	return take(cons, subj, n)
}

// take fetches up to n messages from a queue consumer without waiting.
func take(cons jetstream.Consumer, subj string, n int) ([]*QueuedStep, error) {
	batch, err := cons.FetchNoWait(max(n, 1))
	if err != nil {
		return nil, fmt.Errorf("bus: fetch %s: %w", subj, err)
	}
	var out []*QueuedStep
	for m := range batch.Messages() {
		tenant, capability, prio, _ := subjects.ParseQueue(m.Subject())
		q := &QueuedStep{Tenant: tenant, Capability: capability, Priority: prio, MsgID: m.Headers().Get(jetstream.MsgIDHeader), msg: m}
		if md, err := m.Metadata(); err == nil {
			q.At = md.Timestamp
		}
		out = append(out, q)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && len(out) == 0 {
		return nil, fmt.Errorf("bus: fetch %s: %w", subj, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no step waits on %s", ErrNotFound, subj)
	}
	return out, nil
}

// StepCounts counts the requests stored on a capability's step subject by
// tenant: those waiting for a worker and those running (a request leaves
// the work-queue stream when its worker acknowledges it, after its reply).
func (b *Bus) StepCounts(ctx context.Context, capability string) (map[string]uint64, error) {
	b.ops.lookup()
	filter, err := subjects.StepFilter(capability)
	if err != nil {
		return nil, err
	}
	s, err := b.js.Stream(ctx, subjects.StreamSteps)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", subjects.StreamSteps, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", subjects.StreamSteps, err)
	}
	out := make(map[string]uint64, len(info.State.Subjects))
	for subj, n := range info.State.Subjects {
		if p, err := subjects.Parse(subj); err == nil {
			out[p.Tenant] += n
		}
	}
	return out, nil
}
