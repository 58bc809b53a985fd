package gateway

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/gateway/a2a"
	"github.com/agentbus/agentbus/gateway/internal/fanout"
	"github.com/agentbus/agentbus/gateway/ws"
	"github.com/agentbus/agentbus/mcpserver"
	"github.com/agentbus/agentbus/schemas"
)

// mount makes the protocol servers the gateway serves beside its own
// routes: WebSocket (package ws), A2A (package a2a) and MCP (package
// mcpserver, mounted at /mcp by routes). They see the
// gateway only through host, and share its fan-out, bus, logger and
// metrics, so their streams, log lines and metrics are the gateway's.
func (g *Gateway) mount() {
	h := host{g}
	st := g.stats()
	g.ws = ws.New(g.cfg.WS, ws.Deps{Gateway: h, Hubs: g.hubs, Bus: g.bus, Logger: g.log, Metrics: ws.Metrics{
		FramesSent: st.framesSent.WithLabelValues(metricKindWS),
		Resets:     st.resets.WithLabelValues(metricKindWS),
		Replays:    st.replays.WithLabelValues(metricKindWS),
	}})
	g.a2a = a2a.New(g.cfg.A2A, a2a.Deps{Gateway: h, Bus: g.bus, Checkpoints: g.checkpoints, Registry: g.registry, Hubs: g.hubs,
		Logger: g.log, AuthFailures: st.authFailures, AuthOn: len(g.cfg.Auth.Tokens) > 0,
		MaxBodyBytes: g.cfg.MaxBodyBytes, MaxUploadBytes: g.cfg.Documents.MaxUploadBytes, AcceptTimeout: g.cfg.AcceptTimeout, KeepAlive: g.cfg.KeepAlive, SendQueueBytes: g.cfg.WS.SendQueueBytes})
	// The MCP server acts through this gateway's REST API, called back on
	// the listener each session arrived on with each request's own
	// credentials: the request has passed wrap's authentication, and every
	// call it makes passes it again, so the token decides the tenant and
	// the role as it does anywhere else, with no second path to the bus.
	g.mcp = mcpserver.Handler(mcpserver.HandlerConfig{Logger: g.log.With("component", "mcp")})
}

// routeMCP is the MCP endpoint (streamable HTTP): POST, GET and DELETE.
const routeMCP = "/mcp"

// host is the gateway as its protocol servers see it: authentication, the
// scope of a request, where a stream starts, and the API's error shape.
// It is a value over a *Gateway, safe for concurrent use.
type host struct{ g *Gateway }

var (
	_ ws.Gateway  = host{}
	_ a2a.Gateway = host{}
)

func (h host) Tenant(w http.ResponseWriter, r *http.Request) (string, bool) { return h.g.tenant(w, r) }

func (h host) MayControl(r *http.Request) bool { return h.g.mayControl(r) }

func (h host) ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	return h.g.readBody(w, r)
}

func (h host) User(ctx context.Context) string { return userOf(ctx) }

func (h host) Sees(ctx context.Context, cp map[string]json.RawMessage) bool {
	return h.g.visible(ctx, cp)
}

func (h host) SeesAll(ctx context.Context) bool { return h.g.scopeOf(ctx).all }

func (h host) Submit(ctx context.Context, tenant, key, workflow string, sub events.WorkflowSubmitted) (SubmitResponse, error) {
	return h.g.store(ctx, tenant, key, workflow, sub)
}

func (h host) WriteError(w http.ResponseWriter, status int, code, message string, probs []schemas.Problem) {
	writeError(w, status, apiError{Code: code, Message: message, Problems: bodyProblems(probs)})
}

func (h host) WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

func (h host) ErrorBody(code, message string, probs []schemas.Problem) any {
	return apiError{Code: code, Message: message, Problems: bodyProblems(probs)}
}

// Workflow resolves where a WebSocket stream of workflow {id} starts
// (requestStart), with its opening frames.
func (h host) Workflow(w http.ResponseWriter, r *http.Request, tenant string) (ws.Start, bool) {
	st, ok := h.g.requestStart(w, r, tenant)
	if !ok {
		return ws.Start{}, false
	}
	return ws.Start{Epoch: st.Epoch, Opening: openingFrames(st, tenant, r.PathValue("id")), After: st.After,
		Live: st.Last.Offset <= st.After, Reset: st.Reset != nil, Replay: st.Last.Offset > st.After, Done: st.Done}, true
}

// TenantFeed resolves where a WebSocket tenant feed starts
// (requestFeedStart), with its opening frames and its feeder.
func (h host) TenantFeed(w http.ResponseWriter, r *http.Request, tenant string) (ws.Start, bool) {
	st, ok := h.g.requestFeedStart(w, r)
	if !ok {
		return ws.Start{}, false
	}
	feed := func(ctx context.Context, sub *fanout.Subscriber) *fanout.Feeder {
		return h.g.startTenantFeed(ctx, sub, tenant, st)
	}
	return ws.Start{Epoch: st.Epoch, Opening: feedOpening(st, tenant), After: st.After, Reset: st.Reset != nil, Feed: feed}, true
}

// Refusal is why a WebSocket's control frames are refused: a viewer's
// token, or a page on another origin that a cross-site POST would be
// refused for (the handshake is a GET, but control frames are writes).
func (h host) Refusal(r *http.Request) func(action string) string {
	switch {
	case !h.g.mayControl(r):
		return func(a string) string { return "this token may watch the workflow but not " + a + " it" }
	case h.g.crossSiteWrite(r) != nil:
		origin := quoted(r.Header.Get("Origin"))
		return func(a string) string {
			return "a page on another origin (" + origin + ") may watch the workflow but not " + a + " it: the gateway must list its origin in --cors-origins"
		}
	}
	return nil
}

// Refuse answers a refused WebSocket handshake in the error shape rather
// than coder/websocket's text/plain.
func (h host) Refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	e := apiError{Code: "invalid_request", Message: "websocket handshake refused: " + msg}
	switch status {
	case http.StatusForbidden:
		e.Code = "forbidden"
		e.Problems = []Problem{headerProblem("Origin", "%s is neither this gateway's origin nor one of its --cors-origins", quoted(r.Header.Get("Origin")))}
	case http.StatusUpgradeRequired:
		e.Code = "upgrade_required"
		e.Problems = []Problem{headerProblem("Upgrade", "%s", msg)}
	}
	writeError(w, status, e)
}
