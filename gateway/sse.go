package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentbus/agentbus/gateway/internal/fanout"
)

// Connected is the first SSE frame: where the stream starts and the newest
// offset at connect time.
type Connected struct {
	WorkflowID string `json:"workflow_id"`
	Epoch      string `json:"epoch"`
	From       uint64 `json:"from"`
	LastOffset uint64 `json:"last_offset"`
}

// sse streams a workflow's events as Server-Sent Events, each with id: set
// to its offset and data: its frame (as a WebSocket frame). It starts after
// ?from= or Last-Event-ID (exclusive; absent means the first event) and
// ends after the workflow's terminal event; a resume at or past the
// terminal event gets 204 No Content, which also stops a browser's
// EventSource from reconnecting. The first frame is `connected`; a void
// cursor (?epoch= not the stream's, or an offset past retention) is
// followed by a `reset` frame whose id is the resume point, as on the
// WebSocket. A client that falls a whole send queue behind the live tail
// has its stream ended and resumes from its Last-Event-ID.
func (g *Gateway) sse(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, apiError{Code: "internal", Message: "streaming unsupported"})
		return
	}
	st, ok := g.requestStart(w, r, tenant)
	if !ok {
		return
	}
	ctx := r.Context()
	if st.Done && st.Reset == nil {
		w.WriteHeader(http.StatusNoContent)
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
	if st.Last.Offset > st.After {
		g.stats().replays.WithLabelValues(metricKindSSE).Inc()
	}
	writeSSEOpening(w, st, tenant, id)
	flusher.Flush()
	if st.Done {
		return
	}
	g.pumpSSE(ctx, w, flusher, st, tenant, id)
}

// pumpSSE writes the workflow's events to an SSE stream until the terminal
// one, the client's end, or its falling a whole send queue behind.
func (g *Gateway) pumpSSE(ctx context.Context, w http.ResponseWriter, flusher http.Flusher, st streamStart, tenant, id string) {
	ctx, cancel := context.WithCancel(ctx)
	q := fanout.NewQueue(g.cfg.WS.SendQueueBytes, metricKindSSE)
	sub := fanout.NewSubscriber(q, st.After)
	f := g.hubs.StartFeed(ctx, sub, tenant, id, st.Epoch, st.Last.Offset <= st.After)
	defer func() { cancel(); f.Stop() }()
	g.drainSSE(ctx, w, flusher, q, sub.Failed(), f, func() bool {
		if f.Err() != nil {
			g.log.Warn("sse event stream failed", "tenant", tenant, "workflow", id, "err", f.Err())
			return true
		}
		return false // joined the hub: it queues from now on
	})
}

// drainSSE writes the frames queued in q to an SSE stream, with a
// keepalive comment every KeepAlive, until ctx ends, the queue overflows
// (the client resumes from its Last-Event-ID), a frame that ends the
// stream is written, failed is closed, or the feeder is done and fedDone
// says to stop.
func (g *Gateway) drainSSE(ctx context.Context, w http.ResponseWriter, flusher http.Flusher, q *fanout.Queue, failed <-chan struct{}, f *fanout.Feeder, fedDone func() (stop bool)) {
	fed := f.Done()
	sent := g.stats().framesSent.WithLabelValues(metricKindSSE)
	tick := time.NewTicker(g.cfg.KeepAlive)
	defer tick.Stop()
	var line []byte
	for {
		for {
			it, ok := q.Head()
			if !ok {
				break
			}
			line = appendSSE(line[:0], it)
			if _, err := w.Write(line); err != nil {
				return
			}
			q.Pop()
			sent.Inc()
			if it.End {
				flusher.Flush()
				return
			}
		}
		flusher.Flush()
		select {
		case <-ctx.Done():
			return
		case <-q.Overflow():
			return
		case <-failed:
			return
		case <-fed:
			if fedDone() {
				return
			}
			fed = nil
		case <-tick.C:
			_, _ = fmt.Fprint(w, ": keepalive\n\n")
			flusher.Flush()
		case <-q.Ready():
		}
	}
}

// appendSSE appends one event frame in the SSE format.
func appendSSE(dst []byte, it fanout.Item) []byte {
	dst = append(dst, "id: "...)
	dst = strconv.AppendUint(dst, it.Offset, 10)
	dst = append(dst, "\nevent: "...)
	dst = append(dst, it.Type...)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, it.Bytes...)
	return append(dst, "\n\n"...)
}

func writeSSE(w http.ResponseWriter, event, id string, v any) {
	data, _ := json.Marshal(v)
	if id != "" {
		_, _ = fmt.Fprintf(w, "id: %s\n", id)
	}
	_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
}

// startOffset reads the stream's cursor: Last-Event-ID if present, else
// ?from=. Last-Event-ID wins because it is newer than the URL: a browser's
// EventSource reconnects to the URL it was opened with (…/events?from=0)
// and says where it got to in the header; reading the URL first replayed
// the whole workflow on every reconnect. A bad cursor is a Problem naming
// the header or parameter it came from.
func startOffset(r *http.Request) (uint64, *Problem) {
	v, in, name := r.Header.Get("Last-Event-ID"), InHeader, "Last-Event-ID"
	if v == "" {
		v, in, name = r.URL.Query().Get("from"), InQuery, "from"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, &Problem{In: in, Name: name, Message: quoted(v) + " is not an offset (a non-negative integer)"}
	}
	return n, nil
}
