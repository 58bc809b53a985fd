package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway/internal/fanout"
	"github.com/agentbus/agentbus/subjects"
	wf "github.com/agentbus/agentbus/workflow"
)

// The tenant feed: GET /v1/workflows/events (SSE) and GET /v1/ws
// (WebSocket) carry, for the token's tenant only and the workflows the
// request sees there (another user's are left out: auth_scope.go), every
// change of a workflow's own status (status events without a step id) and
// every terminal event, as `workflow_status` frames whose data is
// WorkflowStatus. It is backed by one ordered consumer per stream on
// agentbus.<tenant>.events.* (bus.FollowTenant), not by polling; whose a
// workflow is comes from its checkpoint, read once per workflow per feed.
//
// Cursor: ?from= or Last-Event-ID (which wins, as on the per-workflow
// SSE), and ?epoch=. Offsets are the events stream's sequences, shared by
// every workflow, so they strictly increase along the feed. Without a
// cursor the feed starts live, after the newest event at connect time
// (`connected`.from says which: a client that lists workflows first and
// then connects with that offset misses nothing); from=0 replays every
// retained event of the tenant. A void cursor (another epoch, or an offset
// before the oldest retained event of the stream) gets a `reset` frame
// {reason, epoch, resume_from} and the feed goes on live from resume_from:
// the client reloads its list (GET /v1/workflows). ?status=a,b keeps only
// those states. The feed never ends by itself.

// FrameWorkflowStatus is the frame type of the tenant feed; data is
// WorkflowStatus, offset the event's.
const FrameWorkflowStatus = "workflow_status"

// WorkflowStatus is one status change of a workflow in the tenant feed.
type WorkflowStatus struct {
	WorkflowID string       `json:"workflow_id"`
	State      events.State `json:"state"`
	// Event is the type of the stored event it came from: "status", or
	// the terminal "complete", "error" or "cancelled" (which repeat the
	// final state a status event also gives).
	Event   string `json:"event"`
	Message string `json:"message,omitempty"`
	// Query is the workflow's query, when its checkpoint has one.
	Query string `json:"query,omitempty"`
	// Time is when the event happened; CreatedAt when the workflow was
	// submitted, when its checkpoint says.
	Time      time.Time  `json:"time"`
	CreatedAt *time.Time `json:"created_at,omitempty"`
	Final     bool       `json:"final,omitempty"`
}

// FeedConnected is the tenant feed's first frame.
type FeedConnected struct {
	TenantID   string   `json:"tenant_id"`
	Epoch      string   `json:"epoch"`
	From       uint64   `json:"from"`
	LastOffset uint64   `json:"last_offset"`
	Status     []string `json:"status,omitempty"`
}

// routesTenantFeed serves the tenant feed as SSE; package ws serves it on
// GET /v1/ws.
func (g *Gateway) routesTenantFeed() {
	g.mux.HandleFunc("GET /v1/workflows/events", g.tenantSSE)
}

// feedStart is where one tenant feed begins.
type feedStart struct {
	Epoch       string
	From, After uint64
	Last        uint64
	Reset       json.RawMessage
	Status      []events.State
}

// feedStates are the states ?status= may name.
var feedStates = []events.State{events.StateSubmitted, events.StateWorking, events.StateInputRequired,
	events.StateCompleted, events.StateFailed, events.StateCanceled, events.StateRejected}

// requestFeedStart reads a tenant feed's cursor and filter and decides
// where it starts; a bad parameter (400, naming it) or an unreachable
// stream (503) is answered here, and ok is false.
func (g *Gateway) requestFeedStart(w http.ResponseWriter, r *http.Request) (st feedStart, ok bool) {
	from, p := startOffset(r)
	if p != nil {
		writeBadRequest(w, *p)
		return st, false
	}
	given := r.Header.Get("Last-Event-ID") != "" || r.URL.Query().Get("from") != ""
	q := r.URL.Query()
	clientEpoch := q.Get("epoch")
	if len(clientEpoch) > maxEpoch {
		writeBadRequest(w, queryProblem("epoch", "%s is longer than %d bytes: not an epoch this gateway gave", quoted(clientEpoch), maxEpoch))
		return st, false
	}
	if v := q.Get("status"); v != "" {
		for s := range strings.SplitSeq(v, ",") {
			s = strings.TrimSpace(s)
			if !slices.Contains(feedStates, events.State(s)) {
				writeBadRequest(w, queryProblem("status", "%s is not a workflow state (want any of %s, comma-separated)", quoted(s), stateList()))
				return st, false
			}
			st.Status = append(st.Status, events.State(s))
		}
	}
	ctx := r.Context()
	epoch, err := g.bus.Epoch(ctx)
	if err == nil {
		var first uint64
		first, st.Last, err = g.bus.EventsRange(ctx)
		st.Epoch, st.From, st.After = epoch, from, from
		if err == nil {
			st.Reset, err = feedReset(&st, given, clientEpoch, first)
		}
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return st, false
	}
	return st, true
}

// feedReset decides whether the cursor is void and moves st.After: no
// cursor starts live; a void one (another epoch, or before first-1 where
// events may have expired) resets to live.
func feedReset(st *feedStart, given bool, clientEpoch string, first uint64) (json.RawMessage, error) {
	if !given {
		st.From, st.After = st.Last, st.Last
		return nil, nil
	}
	reason := ""
	switch {
	case clientEpoch != "" && clientEpoch != st.Epoch:
		reason = ResetEpoch
	case st.From > 0 && st.From+1 < first:
		reason = ResetRetention
	}
	if reason == "" {
		return nil, nil
	}
	st.After = st.Last
	b, err := json.Marshal(map[string]any{"reason": reason, "epoch": st.Epoch, "resume_from": st.After})
	if err != nil {
		return nil, fmt.Errorf("gateway: reset frame: %w", err)
	}
	return b, nil
}

func stateList() string {
	out := make([]string, len(feedStates))
	for i, s := range feedStates {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}

// feedOpening is the tenant feed's opening frames: connected, then reset
// if the cursor was void.
func feedOpening(st feedStart, tenant string) []events.Frame {
	now := time.Now().UTC()
	c := FeedConnected{TenantID: tenant, Epoch: st.Epoch, From: st.From, LastOffset: st.Last}
	for _, s := range st.Status {
		c.Status = append(c.Status, string(s))
	}
	data, _ := json.Marshal(c)
	out := []events.Frame{{Epoch: st.Epoch, Type: FrameConnected, TenantID: tenant, Time: now, Data: data}}
	if st.Reset != nil {
		out = append(out, events.Frame{Epoch: st.Epoch, Type: FrameReset, TenantID: tenant, Time: now, Data: st.Reset})
	}
	return out
}

// workflowStatus turns a stored record into a feed entry; ok is false for
// events the feed does not carry (a step's status, progress, artifacts).
func workflowStatus(rec bus.Record) (ws WorkflowStatus, ok bool) {
	e := rec.Envelope
	ws = WorkflowStatus{WorkflowID: e.WorkflowID, Event: e.Type.Short(), Time: e.Time, Final: e.Type.Terminal()}
	switch e.Type {
	case events.TypeStatus:
		var s events.Status
		if e.StepID != "" || e.Unmarshal(&s) != nil || s.StepID != "" {
			return ws, false
		}
		ws.State, ws.Message, ws.Final = s.State, s.Message, s.State.Terminal()
	case events.TypeComplete:
		ws.State = events.StateCompleted
	case events.TypeCancelled:
		ws.State = events.StateCanceled
	case events.TypeError:
		var er events.Error
		_ = e.Unmarshal(&er)
		ws.State, ws.Message = events.StateFailed, er.Message
		if er.Code == events.CodeRejected {
			ws.State = events.StateRejected
		}
	default:
		return ws, false
	}
	return ws, true
}

// workflowFacts is what a feed remembers of a workflow's checkpoint.
type workflowFacts struct {
	query   string
	created *time.Time
	// owner is whom the workflow runs for (fixed at submission, so it
	// never goes stale); known is false when there is no checkpoint to
	// tell (none, yet or any more, or an unreadable one).
	owner string
	known bool
}

// maxFeedFacts bounds one feed's cache of checkpoint facts.
const maxFeedFacts = 1024

// facts reads the workflow's query, creation time and owner from its
// checkpoint once per feed: the owner check of every frame after the
// workflow's first costs a map lookup. A workflow without a checkpoint
// (yet) is asked again next time; err is a failure to read one.
func (g *Gateway) facts(ctx context.Context, cache map[string]workflowFacts, tenant, workflow string) (workflowFacts, error) {
	if f, ok := cache[workflow]; ok {
		return f, nil
	}
	key, err := subjects.CheckpointKey(tenant, workflow)
	if err != nil {
		return workflowFacts{}, nil
	}
	e, err := g.checkpoints.Get(ctx, key)
	if errors.Is(err, bus.ErrNotFound) {
		return workflowFacts{}, nil
	}
	if err != nil {
		return workflowFacts{}, fmt.Errorf("gateway: tenant feed: checkpoint of %s: %w", workflow, err)
	}
	var cp struct {
		Query     string          `json:"query"`
		CreatedAt time.Time       `json:"created_at"`
		User      json.RawMessage `json:"user"`
	}
	if wf.UnmarshalCheckpoint(e.Value, &cp) != nil {
		return workflowFacts{}, nil
	}
	f := workflowFacts{query: cp.Query, owner: ownerOf(cp.User), known: true}
	if !cp.CreatedAt.IsZero() {
		f.created = &cp.CreatedAt
	}
	if len(cache) >= maxFeedFacts {
		clear(cache)
	}
	cache[workflow] = f
	return f, nil
}

// tenantFeed queues the tenant's workflow status frames after st.After
// into q until ctx ends or the client falls a whole queue behind once live
// (fanout.ErrSlow: the queue overflowed). While replaying, a full queue
// waits for the client, as a workflow's feed does. Only a failure of the
// event stream is an error.
func (g *Gateway) tenantFeed(ctx context.Context, q *fanout.Queue, tenant string, st feedStart) error {
	live := st.Last <= st.After
	cache := map[string]workflowFacts{}
	sc := g.scopeOf(ctx)
	err := g.bus.FollowTenant(ctx, tenant, st.After, func(ctx context.Context, rec bus.Record) error {
		defer func() { live = live || rec.Pending == 0 }()
		ws, ok := workflowStatus(rec)
		if !ok || (len(st.Status) > 0 && !slices.Contains(st.Status, ws.State)) {
			return nil
		}
		f, err := g.facts(ctx, cache, tenant, ws.WorkflowID)
		if !sc.all {
			// Only frames of workflows the feed's request sees, as their
			// checkpoint tells: failing to read one ends the feed (the
			// client resumes from its cursor) rather than guess.
			if err != nil {
				return err
			}
			if !f.known || !sc.sees(f.owner) {
				return nil
			}
		}
		ws.Query, ws.CreatedAt = f.query, f.created
		data, err := json.Marshal(ws)
		if err != nil {
			return err
		}
		fr := events.Frame{Offset: rec.Offset, Epoch: st.Epoch, Type: FrameWorkflowStatus, WorkflowID: ws.WorkflowID,
			TenantID: tenant, Time: rec.Envelope.Time, Data: data}
		it := fanout.Item{Bytes: fanout.AppendFrame(make([]byte, 0, 256+len(data)), fr), Event: true, Offset: rec.Offset, Type: fr.Type}
		return g.hubs.Enqueue(ctx, q, it, !live, tenant, "*")
	})
	switch {
	case errors.Is(err, fanout.ErrSlow) || ctx.Err() != nil:
		return nil
	case err == nil:
		return errors.New("gateway: tenant event stream ended under the feed")
	}
	return err
}

// startTenantFeed runs tenantFeed into sub's queue in a goroutine of its
// own, as a feeder (with no hub) so that the WebSocket pump can watch it.
func (g *Gateway) startTenantFeed(ctx context.Context, sub *fanout.Subscriber, tenant string, st feedStart) *fanout.Feeder {
	return fanout.StartFunc(sub, func() error { return g.tenantFeed(ctx, sub.Queue(), tenant, st) })
}

// tenantSSE streams the tenant feed as Server-Sent Events: `connected`,
// `reset` (id: its resume point) if the cursor was void, then
// workflow_status events with id: their offset. A client a whole send
// queue behind, live, has its stream ended and resumes from its
// Last-Event-ID.
func (g *Gateway) tenantSSE(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, apiError{Code: "internal", Message: "streaming unsupported"})
		return
	}
	st, ok := g.requestFeedStart(w, r)
	if !ok {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if st.Reset != nil {
		g.stats().resets.WithLabelValues(metricKindSSE).Inc()
	}
	for _, f := range feedOpening(st, tenant) {
		if f.Type == FrameConnected {
			_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", f.Type, f.Data)
			continue
		}
		writeSSE(w, f.Type, strconv.FormatUint(st.After, 10), f)
	}
	flusher.Flush()

	ctx, cancel := context.WithCancel(r.Context())
	q := fanout.NewQueue(g.cfg.WS.SendQueueBytes, metricKindSSE)
	sub := fanout.NewSubscriber(q, st.After)
	f := g.startTenantFeed(ctx, sub, tenant, st)
	defer func() { cancel(); f.Stop() }()
	g.drainSSE(ctx, w, flusher, q, nil, f, func() bool {
		if f.Err() != nil {
			g.log.Warn("tenant feed failed", "tenant", tenant, "err", f.Err())
		}
		return true
	})
}
