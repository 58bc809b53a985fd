package ws

import (
	"context"
	"net/http"
	"sync"

	"github.com/coder/websocket"

	"github.com/agentbus/agentbus/gateway/internal/fanout"
)

// serveTenant upgrades GET /v1/ws?from=OFFSET&epoch=EPOCH&status=… to a
// WebSocket carrying the tenant feed (gateway/tenantfeed.go): text
// frames as the per-workflow WebSocket sends them — `connected` (data:
// gateway.FeedConnected), `reset` if the cursor was void, then workflow_status
// frames whose offset is the resume point. Close codes are the
// per-workflow WebSocket's (1001, 1008, 1011, 4008: resume from your last
// offset); the feed never ends by itself. Client control frames are
// answered with a forbidden control_result: the feed belongs to no one
// workflow. Problems found before the upgrade are plain HTTP answers.
func (s *Server) serveTenant(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.gw.Tenant(w, r)
	if !ok {
		return
	}
	st, ok := s.gw.TenantFeed(w, r, tenant)
	if !ok {
		return
	}
	c, cork, ok := s.accept(w, r)
	if !ok {
		return
	}
	defer s.sockets.Done()
	refusal := func(a string) string {
		return "the tenant feed follows every workflow and may not " + a + " one: use the workflow's own WebSocket (/v1/workflows/{id}/ws) or POST /v1/workflows/{id}/" + a
	}
	wc := newWSConn(s, c, cork, tenant, "", st.Epoch, refusal)
	wc.serveTenant(r.Context(), st)
}

// serveTenant runs a tenant feed connection until it closes, as serve runs
// a workflow's; every goroutine it started has ended when it returns.
func (wc *wsConn) serveTenant(ctx context.Context, st Start) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wc.touch()
	if st.Reset {
		wc.s.metrics.Resets.Inc()
	}
	// The opening frames are queued before the feeder starts: ahead of
	// every event.
	for _, fr := range st.Opening {
		_ = wc.send(ctx, fr, false, true)
	}
	wc.sub = fanout.NewSubscriber(wc.q, st.After)
	f := st.Feed(ctx, wc.sub)
	defer func() {
		cancel()
		_ = wc.c.CloseNow()
		wg.Wait()
		f.Stop()
	}()
	rctx, stopRead := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRead()
	readDone := make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); readDone <- wc.read(rctx) }()

	code, reason := wc.pump(ctx, f, f.Done(), readDone, &wg)
	if code < 0 {
		return // the client is gone; CloseNow above
	}
	if code == websocket.StatusPolicyViolation {
		wc.s.log.Info("websocket idle timeout", "tenant", wc.tenant, "feed", "tenant")
	}
	_ = wc.c.Close(code, reason)
}
