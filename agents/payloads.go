package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
)

// Large payloads cross the worker transparently: a reference in a step's
// input or dependency outputs is replaced by its payload before the
// handler sees the request, and an output or artifact above
// WorkerConfig.PayloadThreshold is stored and replaced by its reference
// before it is published. A Handler never sees a reference.

// resolvePayloads replaces the references in req's input and dependency
// outputs by their payloads. A reference that cannot be read, or whose
// payload does not match it, can never be: its error wraps ErrPermanent.
func resolvePayloads(ctx context.Context, b *bus.Bus, req *Request) error {
	in, err := b.Resolve(ctx, req.TenantID, req.Input)
	if err != nil {
		return payloadError("input", err)
	}
	req.Input = in
	for id, raw := range req.DependencyOutputs {
		out, err := b.Resolve(ctx, req.TenantID, raw)
		if err != nil {
			return payloadError(fmt.Sprintf("output of dependency %s", id), err)
		}
		req.DependencyOutputs[id] = out
	}
	return nil
}

func payloadError(what string, err error) error {
	if errors.Is(err, bus.ErrNotFound) || errors.Is(err, bus.ErrPayloadCorrupt) || errors.Is(err, events.ErrBadRef) {
		return fmt.Errorf("%w: %s: %w", ErrPermanent, what, err)
	}
	return fmt.Errorf("agents: %s: %w", what, err)
}

// offload stores raw when it is above the threshold and returns its
// reference in its place; kind names it under the step attempt's key.
func offload(ctx context.Context, b *bus.Bus, threshold int, req Request, kind string, raw json.RawMessage) (json.RawMessage, error) {
	if threshold < 0 || len(raw) <= threshold {
		return raw, nil
	}
	base := events.StepKey(req.TenantID, req.WorkflowID, req.StepID, req.Attempt)
	out, err := b.Offload(ctx, threshold, base, kind, raw)
	if err != nil {
		return nil, fmt.Errorf("agents: %s of %d bytes: %w", kind, len(raw), err)
	}
	return out, nil
}
