package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/subjects"
)

// TimersStream is the configuration of subjects.StreamTimers for a
// replication factor and dedup window (those of the other streams): timers
// due on subjects.AllTimers, and message schedules (nats-server 2.12 or
// later) on subjects.AllWatches that the server fires onto them.
func TimersStream(replicas int, duplicates time.Duration) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name: subjects.StreamTimers, Description: "agentbus durable timers: workflow deadlines, watchdog schedules",
		Subjects: []string{subjects.AllTimers, subjects.AllWatches}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: duplicates, Replicas: replicas,
		AllowMsgSchedules: true, AllowRollup: true,
	}
}

// EnsureTimers creates subjects.StreamTimers if it does not exist, with the
// replicas and dedup window of subjects.StreamReplies, so that a
// deployment provisioned before the stream existed gains it on the first
// orchestrator's start. Like Provision, it never changes an existing
// stream: one that cannot hold the watchdog's schedules is reported as an
// *IncompatibleError.
func (b *Bus) EnsureTimers(ctx context.Context) error {
	s, err := b.js.Stream(ctx, subjects.StreamTimers)
	if err == nil {
		have := s.CachedInfo().Config
		var diffs []string
		if !have.AllowMsgSchedules {
			diffs = append(diffs, "message schedules are off, want on")
		}
		if !slices.Contains(have.Subjects, subjects.AllTimers) || !slices.Contains(have.Subjects, subjects.AllWatches) {
			diffs = append(diffs, fmt.Sprintf("subjects are %v, want %v", have.Subjects, []string{subjects.AllTimers, subjects.AllWatches}))
		}
		if have.Retention != jetstream.WorkQueuePolicy {
			diffs = append(diffs, fmt.Sprintf("retention is %v, want %v", have.Retention, jetstream.WorkQueuePolicy))
		}
		if len(diffs) > 0 {
			return &IncompatibleError{Kind: "stream", Name: subjects.StreamTimers, Differences: diffs}
		}
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("bus: stream %s: %w", subjects.StreamTimers, err)
	}
	ref, err := b.js.Stream(ctx, subjects.StreamReplies)
	if err != nil {
		return fmt.Errorf("bus: stream %s (to size %s): %w", subjects.StreamReplies, subjects.StreamTimers, err)
	}
	c := ref.CachedInfo().Config
	s, err = b.js.CreateStream(ctx, TimersStream(c.Replicas, c.Duplicates))
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bus: create stream %s: %w", subjects.StreamTimers, err)
	}
	if !s.CachedInfo().Config.AllowMsgSchedules {
		// A server before 2.12 drops the setting it does not know, and a
		// schedule would then never fire.
		_ = b.js.DeleteStream(ctx, subjects.StreamTimers)
		return fmt.Errorf("%w: stream %s needs message schedules, which nats-server %s does not have (2.12 or later does)",
			ErrIncompatible, subjects.StreamTimers, b.nc.ConnectedServerVersion())
	}
	return nil
}

// ConsumeTimers is Consume for a stream of durable timers: messages whose
// handler may answer RetryAfter until they are due. A message waiting out
// its delay stays pending on the consumer, and a consumer delivers nothing
// new once MaxAckPending messages are pending; Consume's bound (a few times
// its concurrency) would let a few hundred waiting timers stall every
// message behind them, so this consumer has no bound. (Each waiting timer
// costs the server a little on every nak: it reviews its pending messages.
// Many timers are better scheduled: see Message.At.)
func (b *Bus) ConsumeTimers(ctx context.Context, cfg ConsumeConfig, h Handler) error {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	ensure := func() (jetstream.Consumer, error) {
		c, err := b.js.CreateOrUpdateConsumer(ctx, cfg.Stream, jetstream.ConsumerConfig{
			Durable: cfg.Durable, FilterSubject: cfg.Filter, AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: cfg.AckWait, MaxDeliver: cfg.MaxDeliver, MaxAckPending: -1,
			DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		if err != nil {
			return nil, fmt.Errorf("bus: consumer %s on %s: %w", cfg.Durable, cfg.Stream, err)
		}
		return c, nil
	}
	return b.consume(ctx, cfg, h, ensure)
}
