package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/subjects"
)

// Read-only look-ups of flow control's state for those who show it (the
// gateway's GET /v1/capabilities): each tenant's steps stored on each
// capability's step subject, in one request, and when a tenant's oldest
// queued step of a capability was queued.

// Flow is flow control's state at one reading: every tenant's steps
// waiting for admission, by capability and priority, and every tenant's
// requests stored on each capability's step subject.
type Flow struct {
	Queued []Waiting
	Stored []StepCount
}

// ReadFlow reads Flow in two stream look-ups (QueuedSteps of
// subjects.AllQueued, StoredSteps). Before any orchestrator made
// subjects.StreamQueue, nothing is queued.
func (b *Bus) ReadFlow(ctx context.Context) (Flow, error) {
	q, err := b.QueuedSteps(ctx, subjects.AllQueued)
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return Flow{}, err
	}
	st, err := b.StoredSteps(ctx)
	if err != nil {
		return Flow{}, err
	}
	return Flow{Queued: q, Stored: st}, nil
}

// StepCount is a count of the step requests stored on one tenant's step
// subject of a capability: waiting for a worker and running.
type StepCount struct {
	Tenant, Capability string
	Count              uint64
}

// StoredSteps counts the step requests stored in subjects.StreamSteps by
// tenant and capability, in one stream look-up (StepCounts does it for one
// capability). A request leaves the work-queue stream when its worker
// acknowledges it, after its reply, so a count holds the steps waiting for
// a worker and those running.
func (b *Bus) StoredSteps(ctx context.Context) ([]StepCount, error) {
	s, err := b.js.Stream(ctx, subjects.StreamSteps)
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", subjects.StreamSteps, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subjects.AllSteps))
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", subjects.StreamSteps, err)
	}
	out := make([]StepCount, 0, len(info.State.Subjects))
	for subj, n := range info.State.Subjects {
		p, err := subjects.Parse(subj)
		if err != nil || n == 0 || p.Kind != "step" {
			continue
		}
		out = append(out, StepCount{Tenant: p.Tenant, Capability: p.Last, Count: n})
	}
	return out, nil
}

// OldestQueued returns, for each of capabilities, when the oldest step of
// tenant's queue of it (any priority) was queued; a capability none of
// whose steps waits is left out. Each is one get of the first message on
// the queue's subjects from sequence 1 (the server finds it in its
// per-subject index, without reading the others): the queue is a work
// queue, so the first message still stored is the oldest still waiting.
func (b *Bus) OldestQueued(ctx context.Context, tenant string, capabilities []string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(capabilities))
	if len(capabilities) == 0 {
		return out, nil
	}
	s, err := b.js.Stream(ctx, subjects.StreamQueue)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bus: stream %s: %w", subjects.StreamQueue, err)
	}
	for _, c := range capabilities {
		filter, err := subjects.TenantQueue(tenant, c)
		if err != nil {
			return nil, err
		}
		m, err := s.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bus: stream %s subject %s: %w", subjects.StreamQueue, filter, err)
		}
		out[c] = m.Time
	}
	return out, nil
}
