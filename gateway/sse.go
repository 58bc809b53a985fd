package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/events"
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
// to its offset. It starts after ?from= or Last-Event-ID (exclusive; absent
// means the first event) and ends after the workflow's terminal event; a
// resume at or past the terminal event gets 204 No Content.
func (g *Gateway) sse(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	from, err := startOffset(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, apiError{Code: "invalid_request", Message: err.Error()})
		return
	}
	if _, ok := g.checkpoint(w, r, tenant); !ok {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, apiError{Code: "internal", Message: "streaming unsupported"})
		return
	}
	ctx := r.Context()
	epoch, err := g.bus.Epoch(ctx)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return
	}
	lastRec, err := g.bus.LastRecord(ctx, tenant, id)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, apiError{Code: "unavailable", Message: err.Error()})
		return
	}
	if lastRec.Envelope.Type.Terminal() && from >= lastRec.Offset {
		// Nothing will ever follow: 204 also tells a browser's EventSource
		// to stop reconnecting.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	lastOff := lastRec.Offset
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	writeSSE(w, "connected", "", Connected{WorkflowID: id, Epoch: epoch, From: from, LastOffset: lastOff})
	flusher.Flush()

	frames := make(chan events.Frame, 64)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(frames)
		_ = g.bus.Follow(fctx, tenant, id, from, func(ctx context.Context, rec bus.Record) error {
			f := events.NewFrame(rec.Envelope, rec.Offset, epoch)
			select {
			case frames <- f:
			case <-ctx.Done():
				return ctx.Err()
			}
			if f.Terminal() {
				return bus.ErrStop
			}
			return nil
		})
	}()
	tick := time.NewTicker(g.cfg.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_, _ = fmt.Fprint(w, ": keepalive\n\n")
			flusher.Flush()
		case f, ok := <-frames:
			if !ok {
				return
			}
			writeSSE(w, f.Type, strconv.FormatUint(f.Offset, 10), f)
			flusher.Flush()
			if f.Terminal() {
				return
			}
		}
	}
}

func writeSSE(w http.ResponseWriter, event, id string, v any) {
	data, _ := json.Marshal(v)
	if id != "" {
		_, _ = fmt.Fprintf(w, "id: %s\n", id)
	}
	_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
}

// startOffset reads ?from= or, for a reconnecting EventSource, Last-Event-ID.
func startOffset(r *http.Request) (uint64, error) {
	v, where := r.URL.Query().Get("from"), "query parameter from"
	if v == "" {
		v, where = r.Header.Get("Last-Event-ID"), "header Last-Event-ID"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, errors.New(where + ": not an offset (a non-negative integer)")
	}
	return n, nil
}
