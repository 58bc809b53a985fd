package watermill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/agentbus/agentbus/agents"
)

// Metadata keys of a step message (besides MetaTenant, MetaWorkflow,
// MetaStep).
const (
	MetaCapability = "agentbus_capability" // the step's capability
	MetaAttempt    = "agentbus_attempt"    // the plan's attempt of the step, from 1
	MetaDelivery   = "agentbus_delivery"   // this delivery of the step message, from 1
	MetaQuery      = "agentbus_query"      // the workflow's query
)

// ErrNoOutput: the handler produced no message, so the step has no
// output — a poison queue middleware took the message, or the handler
// dropped it. The step fails for good, saying so.
var ErrNoOutput = errors.New("watermill: the handler produced no output message")

// Agent serves a capability with a Watermill handler, wrapped in
// Watermill middleware (the first given is the outermost, as a router's
// AddMiddleware applies them): retry, poison queue, correlation id,
// timeout, recoverer … The worker runtime still owns the step message
// underneath — in-progress acks while the handler runs, delivery counts,
// retries with backoff across processes and the dead letter after
// MaxDeliver — which Watermill's own JetStream subscriber cannot give a
// handler.
//
// The step becomes a message whose UUID is unique per delivery, whose
// payload is the step's input (JSON; "{}" when it has none) and whose
// metadata names the tenant, workflow, step, capability, attempt,
// delivery and query; its correlation id is the workflow id. Its context
// is the step's: it ends when the workflow is canceled or the step times
// out. The payload of the first message the handler produces is the
// step's output (JSON). A handler error fails this delivery: the worker
// retries it later, unless it wraps agents.ErrPermanent. No produced
// message fails the step for good with ErrNoOutput.
func Agent(card agents.Card, h message.HandlerFunc, mw ...message.HandlerMiddleware) agents.Agent {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return &handlerAgent{card: card, h: h}
}

type handlerAgent struct {
	card agents.Card
	h    message.HandlerFunc
}

func (a *handlerAgent) Card() agents.Card { return a.card }

func (a *handlerAgent) Handle(ctx context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
	payload := []byte(req.Input)
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	id := fmt.Sprintf("%s/%s/%s/%d/%d", req.TenantID, req.WorkflowID, req.StepID, req.Attempt, req.Delivery)
	msg := message.NewMessageWithContext(ctx, id, payload)
	msg.Metadata = message.Metadata{
		MetaTenant: req.TenantID, MetaWorkflow: req.WorkflowID, MetaStep: req.StepID, MetaCapability: req.Capability,
		MetaAttempt: strconv.Itoa(req.Attempt), MetaDelivery: strconv.Itoa(req.Delivery), MetaQuery: req.Query,
	}
	middleware.SetCorrelationID(req.WorkflowID, msg)
	out, err := a.h(msg)
	if err != nil {
		return nil, fmt.Errorf("watermill handler: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %w", agents.ErrPermanent, ErrNoOutput)
	}
	if !json.Valid(out[0].Payload) {
		return nil, fmt.Errorf("%w: watermill handler: the output message's payload is not JSON", agents.ErrPermanent)
	}
	return json.RawMessage(out[0].Payload), nil
}
