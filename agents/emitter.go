package agents

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// stepEmitter publishes a step's events with dedup keys scoped to the step's
// attempt, so that a retried publish is stored once.
type stepEmitter struct {
	bus    *bus.Bus
	req    Request
	source string
	// threshold is WorkerConfig.PayloadThreshold: larger artifact data
	// is offloaded.
	threshold int
	mu        sync.Mutex
	n         int
}

var _ Emitter = (*stepEmitter)(nil)

func (e *stepEmitter) publish(ctx context.Context, typ events.Type, payload any) error {
	subj, err := subjects.Events(e.req.TenantID, e.req.WorkflowID)
	if err != nil {
		return err
	}
	e.mu.Lock()
	n := e.n
	e.n++
	e.mu.Unlock()
	key := fmt.Sprintf("%s/%s/%d", events.StepKey(e.req.TenantID, e.req.WorkflowID, e.req.StepID, e.req.Attempt), "emit", n)
	env, err := events.New(typ, key, e.source, e.req.TenantID, e.req.WorkflowID, e.req.StepID, payload)
	if err != nil {
		return err
	}
	traceEnvelope(ctx, &env)
	_, err = e.bus.Publish(ctx, subj, env, key)
	return err
}

func (e *stepEmitter) Progress(ctx context.Context, percent float64, message string) error {
	percent = min(max(percent, 0), 100)
	return e.publish(ctx, events.TypeProgress, events.Progress{Percent: percent, StepID: e.req.StepID, Message: message})
}

func (e *stepEmitter) Artifact(ctx context.Context, id, name string, data any, appendChunk, last bool) error {
	raw, err := marshal(data)
	if err != nil {
		return err
	}
	if raw, err = offload(ctx, e.bus, e.threshold, e.req, "artifact", raw); err != nil {
		return err
	}
	return e.publish(ctx, events.TypeArtifact, events.Artifact{
		ArtifactID: id, StepID: e.req.StepID, Name: name, Data: raw, Append: appendChunk, LastChunk: last,
	})
}
