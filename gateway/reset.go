package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
)

// Reset reasons, the "reason" of a reset frame's data.
const (
	// ResetEpoch: the client's epoch is not the events stream's (the stream
	// was recreated), so its offset means nothing here.
	ResetEpoch = "epoch"
	// ResetRetention: events after the client's offset may have expired
	// (--events-max-age) or been deleted.
	ResetRetention = "retention"
)

// Frame types the gateway sends beside a workflow's own events (the
// WebSocket adds ws.FrameControlResult and ws.FrameClientError). Their
// offset is 0: they are not stored events and never a resume point.
const (
	// FrameConnected opens every stream; data is Connected.
	FrameConnected = "connected"
	// FrameReset says the client's cursor is void; data is the workflow's
	// state (as GET /v1/workflows/{id}) plus reason, epoch and resume_from.
	// The events that follow start after resume_from.
	FrameReset = "reset"
)

// streamStart is where one subscriber's stream begins, decided once at
// connect time by resolveStart.
type streamStart struct {
	// Epoch is the events stream's current epoch.
	Epoch string
	// From is the client's cursor; After is where the tail starts
	// (exclusive): From, or the resume point of a reset.
	From, After uint64
	// Last is the workflow's newest retained event at connect time.
	Last bus.Record
	// Reset, when not nil, is the data of a reset frame to send first.
	Reset json.RawMessage
	// Done means nothing will follow: the workflow ended at or before the
	// start, so the stream closes right after its opening frames.
	Done bool
}

// resolveStart checks a subscriber's cursor — offset from (0: the first
// event) and clientEpoch ("" trusts the offset) — against the events stream
// and decides where its stream starts. cp is the workflow's checkpoint, the
// snapshot a reset carries. A void cursor is never silently moved: the
// caller must send the reset frame before the tail.
//
// A cursor is void if its epoch differs from the stream's, or if from
// precedes the workflow's oldest retained event by more than one offset:
// the events in between may have expired. (Offsets are stream sequences
// shared by every workflow, so a hole in one workflow's sequence is normal;
// only a cursor older than the oldest retained event is suspect, and it is
// reset even when nothing was in between, because that cannot be told.)
// Without from (0) the stream starts at the oldest retained event and no
// reset is sent, even if earlier events expired — unless every event of a
// finished workflow expired: then the reset (and the close) is all there is.
func (g *Gateway) resolveStart(ctx context.Context, tenant, workflow string, from uint64, clientEpoch string, cp map[string]json.RawMessage) (streamStart, error) {
	epoch, err := g.bus.Epoch(ctx)
	if err != nil {
		return streamStart{}, err
	}
	last, err := g.bus.LastRecord(ctx, tenant, workflow)
	if err != nil {
		return streamStart{}, err
	}
	st := streamStart{Epoch: epoch, From: from, After: from, Last: last}
	reason := ""
	if clientEpoch != "" && clientEpoch != epoch {
		reason = ResetEpoch
	}
	var oldest uint64
	if reason != "" || from > 0 {
		if oldest, err = g.bus.OldestOffset(ctx, tenant, workflow); err != nil {
			return streamStart{}, err
		}
		if reason == "" && from > 0 && (oldest == 0 || from+1 < oldest) {
			reason = ResetRetention
		}
	}
	if reason == "" && eventsExpired(cp, last) {
		reason = ResetRetention // even without from: nothing would ever come
	}
	if reason == "" {
		st.Done = last.Envelope.Type.Terminal() && from >= last.Offset
		return st, nil
	}
	st.After = 0
	if oldest > 0 {
		st.After = oldest - 1
	}
	st.Done = eventsExpired(cp, last)
	if st.Reset, err = resetData(cp, reason, epoch, st.After); err != nil {
		return streamStart{}, err
	}
	return st, nil
}

// requestStart reads a stream request's cursor — ?from= or Last-Event-ID,
// and ?epoch= — and resolves where the stream starts (resolveStart) for
// the tenant's workflow {id}. A bad cursor (400), an unknown workflow (404)
// or an unreachable stream (503) is answered here, and ok is false.
func (g *Gateway) requestStart(w http.ResponseWriter, r *http.Request, tenant string) (st streamStart, ok bool) {
	from, p := startOffset(r)
	if p != nil {
		writeBadRequest(w, *p)
		return st, false
	}
	clientEpoch := r.URL.Query().Get("epoch")
	if len(clientEpoch) > maxEpoch {
		writeBadRequest(w, queryProblem("epoch", "%s is longer than %d bytes: not an epoch this gateway gave", quoted(clientEpoch), maxEpoch))
		return st, false
	}
	cp, ok := g.streamCheckpoint(w, r, tenant)
	if !ok {
		return st, false
	}
	st, err := g.resolveStart(r.Context(), tenant, r.PathValue("id"), from, clientEpoch, cp)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return st, false
	}
	return st, true
}

// maxEpoch bounds ?epoch=. Any other epoch is not refused: it is void
// (the stream was recreated) and answered with a reset frame.
const maxEpoch = 256

// resetData is a reset frame's data: the checkpoint as GET state shows it
// (without the outbox) plus reason, epoch and resume_from.
func resetData(cp map[string]json.RawMessage, reason, epoch string, resumeFrom uint64) (json.RawMessage, error) {
	out := make(map[string]any, len(cp)+3)
	for k, v := range cp {
		if k != "outbox" {
			out[k] = v
		}
	}
	out["reason"] = reason
	out["epoch"] = epoch
	out["resume_from"] = resumeFrom
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("gateway: reset frame: %w", err)
	}
	return b, nil
}

// minEventsAge is the shortest events retention bus allows
// (StreamsConfig.EventsMaxAge): no event expires sooner after it was stored.
const minEventsAge = time.Minute

// eventsExpired reports whether a finished workflow has no retained event
// because its events expired — not because its terminal event is still on
// its way: the orchestrator stores a checkpoint before it publishes the
// events it queued, so a checkpoint updated less than minEventsAge ago may
// still have them coming.
func eventsExpired(cp map[string]json.RawMessage, last bus.Record) bool {
	var s events.State
	var at time.Time
	return last.Offset == 0 && json.Unmarshal(cp["status"], &s) == nil && s.Terminal() &&
		json.Unmarshal(cp["updated_at"], &at) == nil && time.Since(at) > minEventsAge
}

// openingFrames are the frames every stream starts with: connected, then a
// reset if the cursor was void.
func openingFrames(st streamStart, tenant, workflow string) []events.Frame {
	now := time.Now().UTC()
	c, _ := json.Marshal(Connected{WorkflowID: workflow, Epoch: st.Epoch, From: st.From, LastOffset: st.Last.Offset})
	out := []events.Frame{{Epoch: st.Epoch, Type: FrameConnected, WorkflowID: workflow, TenantID: tenant, Time: now, Data: c}}
	if st.Reset != nil {
		out = append(out, events.Frame{Epoch: st.Epoch, Type: FrameReset, WorkflowID: workflow, TenantID: tenant, Time: now, Data: st.Reset})
	}
	return out
}

// writeSSEOpening writes an SSE stream's opening frames for st: `connected`
// (data: Connected, as sse.go writes it today), then, if the cursor was
// void, `reset` whose id is the resume point, so that an EventSource's
// Last-Event-ID continues from there.
func writeSSEOpening(w http.ResponseWriter, st streamStart, tenant, workflow string) {
	for _, f := range openingFrames(st, tenant, workflow) {
		if f.Type == FrameConnected {
			writeSSE(w, FrameConnected, "", Connected{WorkflowID: workflow, Epoch: st.Epoch, From: st.From, LastOffset: st.Last.Offset})
			continue
		}
		writeSSE(w, f.Type, strconv.FormatUint(st.After, 10), f)
	}
}
