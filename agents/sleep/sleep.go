package sleep

import (
	"context"
	"encoding/json"
	"fmt"
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
	var in Input
	if len(req.Input) > 0 {
		if err := json.Unmarshal(req.Input, &in); err != nil {
			return nil, fmt.Errorf("%w: sleep input: %v", agents.ErrPermanent, err)
		}
	}
	ms := in.MS
	if req.Delivery > 1 && in.RedeliveredMS != nil {
		ms = *in.RedeliveredMS
	}
	if ms < 0 || ms > time.Hour.Milliseconds() {
		return nil, fmt.Errorf("%w: sleep ms %d not in [0, 3600000]", agents.ErrPermanent, ms)
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
