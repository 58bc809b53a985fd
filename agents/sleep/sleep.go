package sleep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentbus/agentbus/agents"
)

// Capability is the capability the sleep agent serves.
const Capability = "sleep"

// Input is the sleep agent's step input.
type Input struct {
	// MS is how long to sleep, at most one hour.
	MS int64 `json:"ms"`
	// RedeliveredMS, if set, replaces MS on a redelivery: a step that blocks
	// on its first delivery can finish quickly on the worker that inherits it.
	RedeliveredMS *int64 `json:"redelivered_ms,omitempty"`
}

// Output is what the sleep agent returns.
type Output struct {
	SleptMS  int64 `json:"slept_ms"`
	Delivery int   `json:"delivery"`
}

// Agent sleeps.
type Agent struct{}

var _ agents.Agent = Agent{}

// Card describes the sleep agent.
func (Agent) Card() agents.Card {
	return agents.Card{
		Name: "sleep", Version: "1.0.0", Capabilities: []string{Capability},
		Description: "Waits for the given number of milliseconds; stands in for slow work.",
		Examples:    []string{"wait for two seconds", "sleep 500 ms"},
	}
}

// Handle sleeps for the input's duration or until ctx ends.
func (Agent) Handle(ctx context.Context, req agents.Request, emit agents.Emitter) (json.RawMessage, error) {
	in, err := decode(req.Input)
	if err != nil {
		return nil, err
	}
	ms := in.MS
	if req.Delivery > 1 && in.RedeliveredMS != nil {
		ms = *in.RedeliveredMS
	}
	_ = emit.Progress(ctx, 0, fmt.Sprintf("sleeping %d ms (delivery %d)", ms, req.Delivery))
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	return json.Marshal(Output{SleptMS: ms, Delivery: req.Delivery})
}

// maxMS is the longest sleep: one hour.
const maxMS = 3_600_000

// decode reads the input {"ms": N, "redelivered_ms": M}. Other fields are
// ignored: a step routed here by semantic discovery carries the planner's
// {"query": …} and sleeps 0 ms. A wrong type or a value out of range is a
// permanent failure naming the field's JSON pointer.
func decode(raw json.RawMessage) (Input, error) {
	var in Input
	if len(raw) == 0 || string(raw) == "null" {
		return in, nil
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return in, fmt.Errorf("%w: sleep input /%s: got a JSON %s, want an integer number of milliseconds in [0, %d]",
				agents.ErrPermanent, strings.ReplaceAll(te.Field, ".", "/"), te.Value, maxMS)
		}
		return in, fmt.Errorf("%w: sleep input: want an object {\"ms\": N}: %v", agents.ErrPermanent, err)
	}
	if in.MS < 0 || in.MS > maxMS {
		return in, fmt.Errorf("%w: sleep input /ms: %d not in [0, %d]", agents.ErrPermanent, in.MS, maxMS)
	}
	if in.RedeliveredMS != nil && (*in.RedeliveredMS < 0 || *in.RedeliveredMS > maxMS) {
		return in, fmt.Errorf("%w: sleep input /redelivered_ms: %d not in [0, %d]", agents.ErrPermanent, *in.RedeliveredMS, maxMS)
	}
	return in, nil
}
