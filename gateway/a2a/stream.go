package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/gateway/internal/fanout"
	"github.com/agentbus/agentbus/subjects"
)

// taskSSE writes A2A events as Server-Sent Events. With a JSON-RPC id,
// each event's data is a JSON-RPC response whose result is the event (what
// message/stream and tasks/resubscribe answer); without one (the legacy
// /tasks/send), the data is the bare event and the SSE event name is its
// kind. An event from the workflow's log carries id: = its offset.
type taskSSE struct {
	w       http.ResponseWriter
	flusher http.Flusher
	rpcID   json.RawMessage
	started bool
}

func newTaskSSE(w http.ResponseWriter, rpcID json.RawMessage) (*taskSSE, bool) {
	f, ok := w.(http.Flusher)
	return &taskSSE{w: w, flusher: f, rpcID: rpcID}, ok
}

func (s *taskSSE) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

// send writes one event; offset 0 means it is not from the log.
func (s *taskSSE) send(offset uint64, ev a2a.Event) {
	s.start()
	if offset > 0 {
		_, _ = fmt.Fprintf(s.w, "id: %d\n", offset)
	}
	var data []byte
	if s.rpcID != nil {
		data, _ = json.Marshal(rpcAnswer(s.rpcID, ev, nil))
	} else {
		data, _ = json.Marshal(ev)
		_, _ = fmt.Fprintf(s.w, "event: %s\n", eventKind(ev))
	}
	_, _ = fmt.Fprintf(s.w, "data: %s\n\n", data)
	s.flusher.Flush()
}

// fail writes an error as the stream's last event.
func (s *taskSSE) fail(rerr *rpcError) {
	s.start()
	var data []byte
	if s.rpcID != nil {
		data, _ = json.Marshal(rpcAnswer(s.rpcID, nil, rerr))
	} else {
		data, _ = json.Marshal(map[string]*rpcError{"error": rerr})
		_, _ = fmt.Fprint(s.w, "event: error\n")
	}
	_, _ = fmt.Fprintf(s.w, "data: %s\n\n", data)
	s.flusher.Flush()
}

func (s *taskSSE) keepalive() {
	s.start()
	_, _ = fmt.Fprint(s.w, ": keepalive\n\n")
	s.flusher.Flush()
}

// eventKind is an event's A2A kind.
func eventKind(ev a2a.Event) string {
	switch ev.(type) {
	case *a2a.Task:
		return "task"
	case *a2a.Message:
		return "message"
	case *a2a.TaskStatusUpdateEvent:
		return "status-update"
	case *a2a.TaskArtifactUpdateEvent:
		return "artifact-update"
	}
	return "event"
}

// rpcStream answers message/stream and tasks/resubscribe with SSE: the
// task first, then an event per update until the final one.
func (g *Server) rpcStream(w http.ResponseWriter, r *http.Request, tenant string, req rpcRequest) {
	s, ok := newTaskSSE(w, req.ID)
	if !ok {
		writeRPC(w, http.StatusOK, req.ID, nil, rpcErr(rpcInternalError, "", "streaming unsupported"))
		return
	}
	ctx := r.Context()
	var (
		task  *a2a.Task
		after uint64
		rerr  *rpcError
	)
	if req.Method == methodStream {
		task, after, rerr = g.streamSend(ctx, tenant, req.Params)
	} else {
		task, after, rerr = g.resubscribe(ctx, tenant, req.Params)
	}
	if rerr != nil {
		s.fail(rerr)
		return
	}
	g.streamTask(ctx, s, tenant, task, after)
}

// streamTask sends task, then its updates after offset after until the
// final one. A task that already ended gets its final status at once.
func (g *Server) streamTask(ctx context.Context, s *taskSSE, tenant string, task *a2a.Task, after uint64) {
	s.send(0, task)
	m := newTaskEvents(string(task.ID), task.ContextID, task.Status.State)
	if steps, ok := task.Metadata["steps"].(map[string]any); ok {
		for id, st := range steps {
			if st, ok := st.(map[string]any); ok && st["state"] == string(a2a.TaskStateInputRequired) {
				m.awaiting[id] = true
			}
		}
	}
	if task.Status.State.Terminal() {
		s.send(0, &a2a.TaskStatusUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Final: true, Status: task.Status})
		return
	}
	err := g.follow(ctx, tenant, string(task.ID), after, s.keepalive, func(rec bus.Record) bool {
		evs, final := m.next(rec.Offset, rec.Envelope)
		for _, ev := range evs {
			s.send(rec.Offset, ev)
		}
		return final
	})
	if err != nil && ctx.Err() == nil {
		s.fail(rpcErr(rpcInternalError, "", "following the task: %v", err))
	}
}

// streamSend starts a task for message/stream (or decides an
// input-required one) and returns it with the offset its updates follow.
func (g *Server) streamSend(ctx context.Context, tenant string, params json.RawMessage) (*a2a.Task, uint64, *rpcError) {
	sr, rerr := decodeSend(params)
	if rerr != nil {
		return nil, 0, rerr
	}
	if sr.taskID == "" {
		in, rerr := decodeParts(sr.parts, "/params/message/parts")
		if rerr != nil {
			return nil, 0, rerr
		}
		task, rerr := g.startTask(ctx, tenant, "", "/params/message/taskId", in, sr.messageID, sr.contextID)
		return task, 0, rerr
	}
	after, rerr := g.followUp(ctx, tenant, sr)
	if rerr != nil {
		return nil, 0, rerr
	}
	cp, rerr := g.loadTask(ctx, tenant, sr.taskID)
	if rerr != nil {
		return nil, 0, rerr
	}
	task := cp.task(sr.historyLength)
	if sr.contextID != "" {
		task.ContextID = sr.contextID
	}
	if task.Status.State.Terminal() {
		// The decision ended the task (a rejection): its events still
		// follow, so stream them rather than a snapshot.
		task.Status = a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: task.Status.Timestamp}
	}
	return task, after, nil
}

// resubscribe answers tasks/resubscribe: the task as it is now and the
// offset of the newest event it reflects. The offset is read before the
// checkpoint, which the orchestrator stores before publishing the events
// of a transition, so no update is lost (one may repeat what the task
// already shows).
func (g *Server) resubscribe(ctx context.Context, tenant string, params json.RawMessage) (*a2a.Task, uint64, *rpcError) {
	id, hist, rerr := decodeTaskID(params)
	if rerr != nil {
		return nil, 0, rerr
	}
	if subjects.ValidWorkflow(id) != nil {
		return nil, 0, errTaskNotFound(id)
	}
	after, err := g.bus.LastOffset(ctx, tenant, id)
	if err != nil {
		return nil, 0, rpcErr(rpcInternalError, "", "reading the task's events: %v", err)
	}
	cp, rerr := g.loadTask(ctx, tenant, id)
	if rerr != nil {
		return nil, 0, rerr
	}
	return cp.task(hist), after, nil
}

// tasksSendStream is the legacy stream: the same updates, bare.
func (g *Server) tasksSendStream(ctx context.Context, w http.ResponseWriter, tenant string, task *a2a.Task) {
	s, ok := newTaskSSE(w, nil)
	if !ok {
		g.gw.WriteError(w, http.StatusInternalServerError, "internal", "streaming unsupported", nil)
		return
	}
	g.streamTask(ctx, s, tenant, task, 0)
}

// errStreamEnded says a stream ended before its task's final event.
var errStreamEnded = errors.New("gateway: event stream ended early")

// follow feeds a workflow's records after offset after to fn until fn
// returns true or ctx ends; keepalive, if set, runs every KeepAlive
// meanwhile. It reads like the WebSocket and SSE streams do (fanout): its
// own ordered consumer while it replays, the workflow's hub once caught up;
// a stream a whole send queue behind the live tail ends with
// fanout.ErrSlow (the A2A client resubscribes).
func (g *Server) follow(ctx context.Context, tenant, id string, after uint64, keepalive func(), fn func(bus.Record) bool) error {
	epoch, err := g.bus.Epoch(ctx)
	if err != nil {
		return err
	}
	last, err := g.bus.LastOffset(ctx, tenant, id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	q := fanout.NewQueue(g.sendQueueBytes, fanout.KindA2A)
	sub := fanout.NewSubscriber(q, after)
	f := g.hubs.StartFeed(ctx, sub, tenant, id, epoch, last <= after)
	defer func() { cancel(); f.Stop() }()
	fed := f.Done()
	var tick <-chan time.Time
	if keepalive != nil {
		t := time.NewTicker(g.keepAlive)
		defer t.Stop()
		tick = t.C
	}
	for {
		for {
			it, ok := q.Head()
			if !ok {
				break
			}
			q.Pop()
			if it.Record != nil && fn(*it.Record) {
				return nil
			}
			if it.End {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-q.Overflow():
			return fanout.ErrSlow
		case <-sub.Failed():
			return fmt.Errorf("%w: %s", errStreamEnded, id)
		case <-fed:
			if f.Err() != nil {
				return f.Err()
			}
			fed = nil
		case <-tick:
			keepalive()
		case <-q.Ready():
		}
	}
}
