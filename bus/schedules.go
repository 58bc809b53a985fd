package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// SchedulesStream is the configuration of subjects.StreamSchedules for a
// replication factor and dedup window: armed schedules on
// subjects.AllSchedules (message schedules, never consumed) and their
// fires on subjects.AllFires (work-queue: each handled once).
func SchedulesStream(replicas int, duplicates time.Duration) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name: subjects.StreamSchedules, Description: "agentbus schedules: repeating message schedules and their fires",
		Subjects: []string{subjects.AllSchedules, subjects.AllFires}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: duplicates, Replicas: replicas,
		AllowMsgSchedules: true, AllowRollup: true,
	}
}

// SchedulesBucket is the configuration of subjects.BucketSchedules for a
// replication factor: one revision per key, kept until rewritten.
func SchedulesBucket(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket: subjects.BucketSchedules, Description: "agentbus schedules: definitions and state",
		History: 1, Storage: jetstream.FileStorage, Replicas: replicas,
	}
}

// Schedules opens subjects.BucketSchedules, creating it with the replicas
// of subjects.BucketCheckpoints if it does not exist.
func (b *Bus) Schedules(ctx context.Context) (*KV, error) {
	return b.openLazily(ctx, subjects.BucketSchedules, SchedulesBucket)
}

// EnsureSchedules creates subjects.StreamSchedules if it does not exist,
// with the replicas and dedup window of subjects.StreamReplies (1 and 2
// minutes on a server not provisioned), as EnsureTimers does. An existing
// stream that cannot hold message schedules is an *IncompatibleError.
func (b *Bus) EnsureSchedules(ctx context.Context) error {
	s, err := b.js.Stream(ctx, subjects.StreamSchedules)
	if err == nil {
		if !s.CachedInfo().Config.AllowMsgSchedules {
			return &IncompatibleError{Kind: "stream", Name: subjects.StreamSchedules, Differences: []string{"message schedules are off, want on"}}
		}
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("bus: stream %s: %w", subjects.StreamSchedules, err)
	}
	replicas, dup := 1, 2*time.Minute
	if ref, err := b.js.Stream(ctx, subjects.StreamReplies); err == nil {
		replicas, dup = ref.CachedInfo().Config.Replicas, ref.CachedInfo().Config.Duplicates
	}
	_, err = retryElection(ctx, b.electionWait, func(ctx context.Context) error {
		s, err = b.js.CreateStream(ctx, SchedulesStream(replicas, dup))
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			s, err = b.js.Stream(ctx, subjects.StreamSchedules)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("bus: create stream %s: %w", subjects.StreamSchedules, err)
	}
	if !s.CachedInfo().Config.AllowMsgSchedules {
		return fmt.Errorf("%w: stream %s needs message schedules, which nats-server %s does not have (2.12 or later does)",
			ErrIncompatible, subjects.StreamSchedules, b.nc.ConnectedServerVersion())
	}
	return nil
}

// Arm is a repeating message schedule: Publish stores it on Subject,
// replacing (rolling up) the one armed there before, and the server then
// publishes a copy of it on Target at every slot of Pattern, once per
// slot however many replicas the stream has, until it is disarmed.
type Arm struct {
	Subject, Target string
	// Pattern is the Nats-Schedule header: "@every 30s" or a six-field
	// cron expression (seconds first).
	Pattern string
	// TimeZone is the IANA zone a cron Pattern is read in; "" is UTC.
	TimeZone string
	Env      events.Envelope
	// MsgID is the dedup id: unique per arming, or a schedule armed
	// again within the dedup window would not be stored.
	MsgID string
}

// ArmSchedule stores a repeating message schedule (see Arm).
func (b *Bus) ArmSchedule(ctx context.Context, a Arm) error {
	b.ops.publish(1)
	m, err := toMsg(a.Subject, a.Env)
	if err != nil {
		return err
	}
	m.Header.Set("Nats-Schedule", a.Pattern)
	m.Header.Set("Nats-Schedule-Target", a.Target)
	if a.TimeZone != "" {
		m.Header.Set("Nats-Schedule-Time-Zone", a.TimeZone)
	}
	m.Header.Set("Nats-Rollup", "sub")
	_, err = retryElection(ctx, b.electionWait, func(ctx context.Context) error {
		_, err := b.js.PublishMsg(ctx, m, jetstream.WithMsgID(a.MsgID))
		return err
	})
	if err != nil {
		return fmt.Errorf("bus: arm schedule on %s: %w", a.Subject, err)
	}
	return nil
}

// DisarmSchedule removes the message schedule armed on subject, if any:
// it fires no more.
func (b *Bus) DisarmSchedule(ctx context.Context, subject string) error {
	if _, err := b.PurgeSubject(ctx, subjects.StreamSchedules, subject); err != nil {
		return fmt.Errorf("bus: disarm schedule on %s: %w", subject, err)
	}
	return nil
}

// ArmedSchedule reports whether a message schedule is armed on subject,
// and its pattern.
func (b *Bus) ArmedSchedule(ctx context.Context, subject string) (string, bool, error) {
	s, err := b.js.Stream(ctx, subjects.StreamSchedules)
	if err != nil {
		return "", false, fmt.Errorf("bus: stream %s: %w", subjects.StreamSchedules, err)
	}
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("bus: stream %s subject %s: %w", subjects.StreamSchedules, subject, err)
	}
	return m.Header.Get("Nats-Schedule"), true, nil
}
