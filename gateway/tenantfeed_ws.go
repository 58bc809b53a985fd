package gateway

import (
	"context"
	"net/http"
	"sync"

	"github.com/coder/websocket"
)

// tenantWS upgrades GET /v1/ws?from=OFFSET&epoch=EPOCH&status=… to a
// WebSocket carrying the tenant feed (see tenantfeed.go): text frames as
// the per-workflow WebSocket sends them — `connected` (data:
// FeedConnected), `reset` if the cursor was void, then workflow_status
// frames whose offset is the resume point. Close codes are the
// per-workflow WebSocket's (1001, 1008, 1011, 4008: resume from your last
// offset); the feed never ends by itself. Client control frames are
// answered with a forbidden control_result: the feed belongs to no one
// workflow. Problems found before the upgrade are plain HTTP answers.
func (g *Gateway) tenantWS(w http.ResponseWriter, r *http.Request) {
	tenant, ok := g.tenant(w, r)
	if !ok {
		return
	}
	st, ok := g.requestFeedStart(w, r)
	if !ok {
		return
	}
	cw := &corkWriter{ResponseWriter: w}
	rw := &refusalWriter{corkWriter: cw}
	c, err := websocket.Accept(rw, r, &websocket.AcceptOptions{Subprotocols: []string{WSSubprotocol}, OriginPatterns: g.cfg.WS.OriginPatterns})
	if err != nil || cw.conn == nil {
		rw.answer(r)
		return
	}
	if !g.socketStarts() {
		_ = c.Close(websocket.StatusGoingAway, "gateway shutting down")
		return
	}
	defer g.sockets.Done()
	c.SetReadLimit(g.cfg.WS.ReadLimit)
	refusal := func(a string) string {
		return "the tenant feed follows every workflow and may not " + a + " one: use the workflow's own WebSocket (/v1/workflows/{id}/ws) or POST /v1/workflows/{id}/" + a
	}
	wc := newWSConn(g, c, cw.conn, tenant, "", st.Epoch, refusal)
	wc.serveTenant(r.Context(), st)
}

// serveTenant runs a tenant feed connection until it closes, as serve runs
// a workflow's; every goroutine it started has ended when it returns.
func (wc *wsConn) serveTenant(ctx context.Context, st feedStart) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wc.touch()
	if st.Reset != nil {
		wc.g.stats().resets.WithLabelValues(metricKindWS).Inc()
	}
	// The opening frames are queued before the feeder starts: ahead of
	// every event.
	for _, fr := range feedOpening(st, wc.tenant) {
		_ = wc.send(ctx, fr, false, true)
	}
	wc.sub = newSubscriber(wc.q, st.After)
	f := wc.g.startTenantFeed(ctx, wc.sub, wc.tenant, st)
	defer func() {
		cancel()
		_ = wc.c.CloseNow()
		wg.Wait()
		f.stop()
	}()
	rctx, stopRead := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRead()
	readDone := make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); readDone <- wc.read(rctx) }()

	code, reason := wc.pump(ctx, f, f.done, readDone, &wg)
	if code < 0 {
		return // the client is gone; CloseNow above
	}
	if code == websocket.StatusPolicyViolation {
		wc.g.log.Info("websocket idle timeout", "tenant", wc.tenant, "feed", "tenant")
	}
	_ = wc.c.Close(code, reason)
}
