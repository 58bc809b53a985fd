package events

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Frame is one client event as WebSocket and SSE clients see it. Offset is the
// event's sequence in the events stream: opaque, strictly increasing within a
// workflow. Epoch names the stream's incarnation; offsets from another epoch
// are meaningless.
type Frame struct {
	Offset     uint64          `json:"offset"`
	Epoch      string          `json:"epoch"`
	Type       string          `json:"type"`
	WorkflowID string          `json:"workflow_id"`
	TenantID   string          `json:"tenant_id"`
	Time       time.Time       `json:"time"`
	StepID     string          `json:"step_id,omitempty"`
	Data       json.RawMessage `json:"data"`
}

// NewFrame turns a decoded envelope stored at offset into a client frame.
func NewFrame(e Envelope, offset uint64, epoch string) Frame {
	return Frame{
		Offset: offset, Epoch: epoch, Type: e.Type.Short(), WorkflowID: e.WorkflowID,
		TenantID: e.TenantID, Time: e.Time, StepID: e.StepID, Data: e.Data,
	}
}

// Terminal reports whether the frame ends its workflow's stream.
func (f Frame) Terminal() bool {
	switch f.Type {
	case TypeComplete.Short(), TypeError.Short(), TypeCancelled.Short():
		return true
	}
	return false
}

// Source values for the components that publish events.
const (
	SourceGateway      = "/agentbus/gateway"
	SourceOrchestrator = "/agentbus/orchestrator"
	SourceAgentPrefix  = "/agentbus/agents/"
)

// Dedup keys (Nats-Msg-Id) are deterministic so that a retried publish is
// stored once by JetStream.

// SubmitKey is the dedup key of a workflow submission.
func SubmitKey(tenant, workflow string) string { return tenant + "/" + workflow + "/submit" }

// StepKey is the dedup key of a step request or its reply for one attempt.
func StepKey(tenant, workflow, step string, attempt int) string {
	return fmt.Sprintf("%s/%s/%s/%d", tenant, workflow, step, attempt)
}

// EventKey is the dedup key (and ce-id) of a workflow's n-th client
// event: "<tenant>/<workflow>/<n>". Until November 2026 it was
// "<tenant>/<workflow>/event/<n>"; an outbox stored then keeps its keys,
// so a republished event is still recognised. Three parts, where a step's
// key (StepKey) has four.
func EventKey(tenant, workflow string, n int) string {
	return tenant + "/" + workflow + "/" + strconv.Itoa(n)
}
