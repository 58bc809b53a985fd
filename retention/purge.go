package retention

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/sessions"
	"github.com/agentbus/agentbus/subjects"
	"github.com/agentbus/agentbus/workflow"
)

// ErrNotFound is returned (wrapped) by Purge for a workflow that does not
// exist (or is already purged).
var ErrNotFound = errors.New("retention: no such workflow")

// ErrRunning is wrapped by *RunningError.
var ErrRunning = errors.New("retention: workflow has not ended")

// RunningError says that a workflow was not purged because it has not
// ended: Status is where it is. Cancel it first.
type RunningError struct {
	Status events.State
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("retention: workflow is %s, not ended: cancel it first", e.Status)
}

// Unwrap lets errors.Is(err, ErrRunning) hold.
func (e *RunningError) Unwrap() error { return ErrRunning }

// Purged is what one purge removed.
type Purged struct {
	Status events.State `json:"status"`
	// Revisions, Events, Messages (replies, timers, the control record)
	// Uploads and Payloads (large inputs, outputs and artifacts in
	// AGENTBUS_PAYLOADS) count what went; Turn says a session's turn went.
	Revisions uint64 `json:"revisions"`
	Events    uint64 `json:"events"`
	Messages  uint64 `json:"messages"`
	Uploads   int    `json:"uploads"`
	Payloads  int    `json:"payloads"`
	Turn      bool   `json:"session_turn"`
}

// Purger removes ended workflows with everything they left. Safe for
// concurrent use.
type Purger struct {
	bus         *bus.Bus
	checkpoints *bus.KV
	controls    *bus.KV
	sessions    *sessions.Store
}

// NewPurger opens the buckets a purge needs; store is the sessions store
// whose turns are forgotten (nil: one on b with the package's defaults).
func NewPurger(ctx context.Context, b *bus.Bus, store *sessions.Store) (*Purger, error) {
	if b == nil {
		return nil, errors.New("retention: purger needs a Bus")
	}
	cps, err := b.KV(ctx, subjects.BucketCheckpoints)
	if err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	ctl, err := b.KV(ctx, subjects.BucketControl)
	if err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	if store == nil {
		if store, err = sessions.New(sessions.Config{Bus: b}); err != nil {
			return nil, fmt.Errorf("retention: %w", err)
		}
	}
	return &Purger{bus: b, checkpoints: cps, controls: ctl, sessions: store}, nil
}

// Purge removes an ended workflow of tenant now, whatever its retention:
// its checkpoint with every revision, its events, replies, timers and
// control record, its turn in its session, what is left of its upload and
// its large payloads.
// A workflow that has not ended is a *RunningError and stays as it was; an
// unknown one wraps ErrNotFound. A purge that stopped half way (the
// checkpoint deleted, not yet purged) is finished.
func (p *Purger) Purge(ctx context.Context, tenant, workflowID string) (Purged, error) {
	key, err := subjects.CheckpointKey(tenant, workflowID)
	if err != nil {
		return Purged{}, err
	}
	e, err := p.checkpoints.GetCurrent(ctx, key)
	if errors.Is(err, bus.ErrNotFound) {
		return p.finish(ctx, key)
	}
	if err != nil {
		return Purged{}, fmt.Errorf("retention: %s: %w", key, err)
	}
	return p.purgeAt(ctx, key, e)
}

// purgeAt purges the workflow whose newest checkpoint revision is e, if it
// has ended and e is still its newest.
func (p *Purger) purgeAt(ctx context.Context, key string, e bus.Entry) (Purged, error) {
	var cp workflow.Checkpoint
	if err := workflow.UnmarshalCheckpoint(e.Value, &cp); err != nil {
		return Purged{}, fmt.Errorf("retention: checkpoint %s is corrupt: %w", key, err)
	}
	if !cp.Status.Terminal() {
		return Purged{}, &RunningError{Status: cp.Status}
	}
	// The fence: from here on the workflow reads as gone, and a write
	// that read revision e (a resume) fails its revision check.
	if err := p.checkpoints.DeleteIf(ctx, key, e.Revision); err != nil {
		return Purged{}, fmt.Errorf("retention: %s: %w", key, err)
	}
	return p.remove(ctx, key, &cp)
}

// finish completes a purge that deleted the checkpoint and stopped: its
// older revisions say what it was. Nothing kept: ErrNotFound.
func (p *Purger) finish(ctx context.Context, key string) (Purged, error) {
	hist, err := p.checkpoints.History(ctx, key)
	if errors.Is(err, bus.ErrNotFound) || err == nil && len(hist) == 0 {
		return Purged{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return Purged{}, fmt.Errorf("retention: %s: %w", key, err)
	}
	var cp workflow.Checkpoint
	if err := workflow.UnmarshalCheckpoint(hist[len(hist)-1].Value, &cp); err != nil {
		return Purged{}, fmt.Errorf("retention: checkpoint %s is corrupt: %w", key, err)
	}
	return p.remove(ctx, key, &cp)
}

// remove deletes what a fenced workflow left, the checkpoint last: until
// then a failed purge can be finished.
func (p *Purger) remove(ctx context.Context, key string, cp *workflow.Checkpoint) (Purged, error) {
	out := Purged{Status: cp.Status}
	tenant, id := cp.TenantID, cp.WorkflowID
	if cp.Session != nil && cp.Session.ID != "" {
		forgot, err := p.sessions.Forget(ctx, tenant, cp.User, cp.Session.ID, id)
		if err != nil {
			return out, fmt.Errorf("retention: %s: session turn: %w", key, err)
		}
		out.Turn = forgot
	}
	if upload := cp.Metadata["upload"]; upload != "" && subjects.ValidWorkflow(upload) == nil {
		n, err := p.bus.RemoveUploads(ctx, tenant, upload)
		if err != nil {
			return out, fmt.Errorf("retention: %s: uploads: %w", key, err)
		}
		out.Uploads = n
	}
	// The payloads go before the events and the checkpoint that refer
	// to them: a purge that stops in between is finished from the
	// checkpoint's history, and finds none left.
	var err error
	if out.Payloads, err = p.bus.RemovePayloads(ctx, tenant, id); err != nil {
		return out, fmt.Errorf("retention: %s: payloads: %w", key, err)
	}
	evs, err := subjects.Events(tenant, id)
	if err != nil {
		return out, err
	}
	if out.Events, err = p.bus.PurgeSubject(ctx, subjects.StreamEvents, evs); err != nil {
		return out, fmt.Errorf("retention: %s: %w", key, err)
	}
	for _, s := range []struct {
		stream string
		subj   func(string, string) (string, error)
	}{{subjects.StreamReplies, subjects.Reply}, {subjects.StreamTimers, subjects.Timer}, {subjects.StreamTimers, subjects.Watch}} {
		subj, err := s.subj(tenant, id)
		if err != nil {
			return out, err
		}
		n, err := p.bus.PurgeSubject(ctx, s.stream, subj)
		if err != nil {
			return out, fmt.Errorf("retention: %s: %w", key, err)
		}
		out.Messages += n
	}
	n, err := p.controls.Purge(ctx, key)
	if err != nil {
		return out, fmt.Errorf("retention: %s: control record: %w", key, err)
	}
	out.Messages += n
	if out.Revisions, err = p.checkpoints.Purge(ctx, key); err != nil {
		return out, fmt.Errorf("retention: %s: %w", key, err)
	}
	return out, nil
}
