package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/agentbus/agentbus/subjects"
)

// Where a browser may put its token besides Authorization: Bearer.
const (
	// TokenCookie is the cookie that may carry the token (for EventSource,
	// which cannot set headers). Requests authenticated by it are refused
	// as cross-origin when they change something and come from another
	// site (http.CrossOriginProtection), since a browser sends cookies on
	// cross-site requests.
	TokenCookie = "agentbus_token"
	// BearerSubprotocol prefixes the token in a WebSocket handshake's
	// Sec-WebSocket-Protocol ("agentbus.bearer.<token>", for browsers,
	// which cannot set headers on a WebSocket). Offer it beside the real
	// subprotocol: the server never selects it, so it is never echoed.
	BearerSubprotocol = "agentbus.bearer."
)

// AuthConfig configures authentication: which bearer tokens map to which
// tenant and role. The zero value (no tokens) means auth off: a
// single-operator setup where the tenant is the X-Agentbus-Tenant header
// (default "default") and anyone who reaches the port may do anything; the
// gateway logs that plainly at startup.
//
// With tokens, every route needs one except GET /healthz, /readyz, /metrics
// and /.well-known/… (the A2A agent card), which carry no tenant's data. A
// token goes in "Authorization: Bearer <token>", in the WebSocket
// subprotocol BearerSubprotocol+token, or in the cookie TokenCookie, tried
// in that order. The tenant comes from the token, never from a body; for
// client and viewer tokens X-Agentbus-Tenant is ignored (the answers'
// tenant_id shows the tenant used; rejecting a differing header would break
// every CLI, which always sends one), and an admin token acts on the tenant
// it names (default: the token's own).
//
// Answers: 401 with WWW-Authenticate: Bearer for a missing, malformed or
// unknown token; 403 for a viewer's POST, or a cookie-authenticated
// cross-site POST; 404, indistinguishable from an unknown id, for another
// tenant's workflow on every surface, and for a workflow of the same
// tenant that the request does not see: another user's, when the token
// (or an admin's X-Agentbus-User) names a user, or any user's, for a
// token without one (auth_scope.go; lists and the tenant feed leave such
// workflows out).
type AuthConfig struct {
	// Tokens grants each secret a tenant and a role; see ParseTokens for
	// the file format. Empty means auth off.
	Tokens []Token

	// mw is the state of the handlers wrap installs (token digests,
	// metrics). setDefaults makes it on New's own copy of the Config, so
	// every Gateway has its own and none is global.
	mw *middleware
}

func (c *AuthConfig) setDefaults() {
	if c.mw == nil {
		c.mw = newMiddleware(c.Tokens)
	}
}

// Validate reports every problem with the configuration; tokens are named
// by their index, never shown.
func (c AuthConfig) Validate() error { return validTokens(c.Tokens) }

// middleware is the state of the cross-cutting handlers. It is read-only
// once made, so safe for concurrent use.
type middleware struct {
	grants  []grant
	metrics *metrics
	csrf    *http.CrossOriginProtection
}

// grant is a Token with its secret kept only as a SHA-256 digest: the
// comparison then takes the same time whatever the secret's length.
type grant struct {
	digest [sha256.Size]byte
	tenant string
	role   Role
	user   string
}

func newMiddleware(tokens []Token) *middleware {
	m := &middleware{metrics: newMetrics(), csrf: http.NewCrossOriginProtection()}
	for _, t := range tokens {
		m.grants = append(m.grants, grant{digest: sha256.Sum256([]byte(t.Token)), tenant: t.Tenant, role: t.Role, user: t.User})
	}
	return m
}

// on reports whether auth is on.
func (m *middleware) on() bool { return m != nil && len(m.grants) > 0 }

// lookup finds the grant of secret, comparing in constant time against
// every grant (no early exit, so timing tells nothing about which matched).
func (m *middleware) lookup(secret string) (grant, bool) {
	d := sha256.Sum256([]byte(secret))
	var found grant
	ok := 0
	for _, g := range m.grants {
		eq := subtle.ConstantTimeCompare(d[:], g.digest[:])
		if eq == 1 {
			found = g
		}
		ok |= eq
	}
	return found, ok == 1
}

// principal is who a request acts as; wrap puts it in the request context.
type principal struct {
	tenant string
	role   Role
	// user is the token's user, or for an admin token the one named by
	// X-Agentbus-User; "" for none.
	user string
}

type principalKey struct{}

// stats returns the gateway's metrics, for the streaming code (see
// metrics for the names and how to count).
func (g *Gateway) stats() *metrics { return g.cfg.Auth.mw.metrics }

func (g *Gateway) routesAuth() {
	g.mux.HandleFunc("GET /readyz", g.readyz)
	g.mux.Handle("GET /metrics", g.stats().handler(g.cfg.Metrics))
	mw := g.cfg.Auth.mw
	if !mw.on() {
		g.log.Warn(`auth is off: no tokens configured, so anyone who reaches the gateway may act for any tenant named in X-Agentbus-Tenant (default "default"); pass --tokens FILE or set AGENTBUS_TOKENS to turn it on`)
		return
	}
	var tenants []string
	roles := map[Role]int{}
	for _, gr := range mw.grants {
		if !slices.Contains(tenants, gr.tenant) {
			tenants = append(tenants, gr.tenant)
		}
		roles[gr.role]++
	}
	slices.Sort(tenants)
	g.log.Info("auth is on", "tokens", len(mw.grants), "tenants", tenants,
		"clients", roles[RoleClient], "viewers", roles[RoleViewer], "admins", roles[RoleAdmin])
}

// wrap puts the cross-cutting handlers around every route, in this order:
// metrics outermost (so refusals are counted too); CORS, which answers
// preflights (they carry no credentials); 404/405 for no route (the route
// table is public, so this tells nothing before authentication); the
// refusal of cross-site writes (crossorigin.go); authentication; the JSON
// body check of writes (415).
func (g *Gateway) wrap(h http.Handler) http.Handler {
	mw := g.cfg.Auth.mw
	mux, _ := h.(interface {
		Handler(*http.Request) (http.Handler, string)
	})
	var inner http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, ok := g.authenticate(w, r, routeOf(h, r))
		if !ok {
			return
		}
		body := jsonBody
		if routeOf(h, r) == routeUpload {
			body = uploadBody
		}
		if !safeMethod(r.Method) && !body(w, r) {
			return
		}
		h.ServeHTTP(w, r)
	})
	if g.writes != nil {
		inner = g.writes.Handler(inner)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := routeOf(h, r)
		rec := mw.metrics.track(w, route)
		defer rec.done()
		if g.cors(rec, r) {
			return
		}
		if route == routeUnmatched && mux != nil && noRoute(rec, r, mux) {
			return
		}
		inner.ServeHTTP(rec, r)
	})
}

// openPaths are the routes served without a token: they carry no tenant's
// data and probes and scrapers hold none.
var openPaths = []string{"/healthz", "/health", "/readyz", "/metrics"}

func openRoute(r *http.Request, route string) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	path := route
	if _, p, ok := strings.Cut(route, " "); ok {
		path = p // "GET /healthz"
	}
	return slices.Contains(openPaths, path) || strings.HasPrefix(path, "/.well-known/") || dashboardRoute(route)
}

// authenticate resolves the request's principal when auth is on (with
// auth off, only the user X-Agentbus-User names: actAsHeaderUser), or
// answers 400/401/403 and returns false.
func (g *Gateway) authenticate(w http.ResponseWriter, r *http.Request, route string) (*http.Request, bool) {
	mw := g.cfg.Auth.mw
	if openRoute(r, route) {
		return r, true
	}
	if !mw.on() {
		return g.actAsHeaderUser(w, r)
	}
	secret, from, err := bearerCredentials(r)
	if err != nil {
		g.refuse(w, http.StatusUnauthorized, "malformed", `Bearer realm="agentbus", error="invalid_request"`, err.Error(),
			headerProblem("Authorization", `want "Bearer <token>"`))
		return r, false
	}
	if secret == "" {
		g.refuse(w, http.StatusUnauthorized, "missing", `Bearer realm="agentbus"`,
			`no credentials: send "Authorization: Bearer <token>" (or, from a browser, the `+TokenCookie+` cookie or the `+BearerSubprotocol+`<token> WebSocket subprotocol)`,
			headerProblem("Authorization", "missing"))
		return r, false
	}
	gr, ok := mw.lookup(secret)
	if !ok {
		// Name where the token came from, never the token.
		g.refuse(w, http.StatusUnauthorized, "invalid", `Bearer realm="agentbus", error="invalid_token"`, "unknown token",
			headerProblem(from, "unknown token"))
		return r, false
	}
	if from == headerCookie {
		if err := cookieCrossSite(mw.csrf, r); err != nil {
			g.refuse(w, http.StatusForbidden, "cross_origin", "", "cross-origin request with the "+TokenCookie+" cookie refused: send the token in an Authorization header",
				headerProblem(headerCookie, "the %s cookie is not accepted cross-site (Sec-Fetch-Site %s, Origin %s)", TokenCookie, quoted(r.Header.Get("Sec-Fetch-Site")), quoted(r.Header.Get("Origin"))))
			return r, false
		}
	}
	// POST /a2a carries reads too (tasks/get, tasks/resubscribe): the
	// A2A handler refuses a viewer's writes by method (mayControl). So
	// does /mcp (resources/read, tools/list), whose tools act through the
	// REST API with the same token: the gateway refuses a viewer's writes
	// there.
	readOnly := r.Method == http.MethodGet || r.Method == http.MethodHead || (r.Method == http.MethodPost && r.URL.Path == "/a2a") || route == routeMCP
	if gr.role == RoleViewer && !readOnly {
		g.refuse(w, http.StatusForbidden, "forbidden", `Bearer realm="agentbus", error="insufficient_scope"`, "a viewer token is read-only: "+r.Method+" needs a client or admin token",
			headerProblem(from, "a viewer token: %s needs a client or admin token", r.Method))
		return r, false
	}
	tenant := gr.tenant
	if h := r.Header.Get(TenantHeader); h != "" && gr.role == RoleAdmin {
		if err := subjects.ValidTenant(h); err != nil {
			writeBadTenant(w, h, err)
			return r, false
		}
		tenant = h
	}
	user := gr.user
	if h := r.Header.Get(UserHeader); h != "" && gr.role == RoleAdmin {
		if err := subjects.ValidUser(h); err != nil {
			writeBadUser(w, h, err)
			return r, false
		}
		user = h
	}
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, principal{tenant: tenant, role: gr.role, user: user})), true
}

// refuse answers 401 or 403 and counts it; challenge, if set, goes in
// WWW-Authenticate, and p names the header the credential came in (never
// its value). Nothing about the token is logged.
func (g *Gateway) refuse(w http.ResponseWriter, status int, reason, challenge, msg string, p Problem) {
	g.stats().authFailures.WithLabelValues(reason).Inc()
	if challenge != "" {
		w.Header().Set("WWW-Authenticate", challenge)
	}
	code := "unauthorized"
	if status == http.StatusForbidden {
		code = "forbidden"
	}
	writeError(w, status, apiError{Code: code, Message: msg, Problems: []Problem{p}})
}

// errBadAuthorization is a present Authorization header that is not a
// bearer token; its value is never echoed.
var errBadAuthorization = errors.New(`header Authorization: want "Bearer <token>"`)

// headerCookie is the header the token cookie comes in.
const headerCookie = "Cookie"

// bearerCredentials returns the request's token, from the first of the
// Authorization header, a WebSocket handshake's bearer subprotocol and the
// cookie that is present, and the header it came in (headerCookie for the
// cookie).
func bearerCredentials(r *http.Request) (secret, from string, err error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, found := strings.Cut(h, " ")
		tok = strings.TrimSpace(tok)
		if !found || !strings.EqualFold(scheme, "Bearer") || tok == "" {
			return "", "Authorization", errBadAuthorization
		}
		return tok, "Authorization", nil
	}
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(v, ",") {
			if tok, ok := strings.CutPrefix(strings.TrimSpace(p), BearerSubprotocol); ok && tok != "" {
				return tok, "Sec-WebSocket-Protocol", nil
			}
		}
	}
	if c, err := r.Cookie(TokenCookie); err == nil && c.Value != "" {
		return c.Value, headerCookie, nil
	}
	return "", "", nil
}

// tenant returns the request's tenant or writes a 400 (bad header, auth
// off) or 401 (auth on, but the request did not pass through wrap).
func (g *Gateway) tenant(w http.ResponseWriter, r *http.Request) (string, bool) {
	if p, ok := r.Context().Value(principalKey{}).(principal); ok {
		return p.tenant, true
	}
	if g.cfg.Auth.mw.on() {
		// Fail closed: only wrap may vouch for a tenant.
		g.refuse(w, http.StatusUnauthorized, "missing", `Bearer realm="agentbus"`, "not authenticated", headerProblem("Authorization", "not authenticated"))
		return "", false
	}
	t := r.Header.Get(TenantHeader)
	if t == "" {
		return DefaultTenant, true
	}
	if err := subjects.ValidTenant(t); err != nil {
		writeBadTenant(w, t, err)
		return "", false
	}
	return t, true
}

// writeBadTenant answers 400 invalid_tenant for a tenant header that is
// not a tenant id.
func writeBadTenant(w http.ResponseWriter, value string, err error) {
	p := headerProblem(TenantHeader, "%s is not a tenant id: %v", quoted(value), err)
	writeError(w, http.StatusBadRequest, apiError{Code: "invalid_tenant", Message: p.String(), Problems: []Problem{p}})
}

// mayControl reports whether the request may change workflows (cancel,
// resume, approve): false for a viewer token. A WebSocket handshake is a
// GET, which a viewer may do, so the WebSocket code must check this before
// acting on a control frame.
func (g *Gateway) mayControl(r *http.Request) bool {
	p, ok := r.Context().Value(principalKey{}).(principal)
	if !ok {
		return !g.cfg.Auth.mw.on()
	}
	return p.role != RoleViewer
}

// user returns the request's user ("" for none): its token's, or the
// X-Agentbus-User header's for an admin token or with auth off; a bad
// header is a 400.
func (g *Gateway) user(w http.ResponseWriter, r *http.Request) (string, bool) {
	if p, ok := r.Context().Value(principalKey{}).(principal); ok {
		return p.user, true
	}
	h := r.Header.Get(UserHeader)
	if h == "" || g.cfg.Auth.mw.on() {
		return "", true
	}
	if err := subjects.ValidUser(h); err != nil {
		writeBadUser(w, h, err)
		return "", false
	}
	return h, true
}

// userOf is the user of a request's context ("" for none): its token's,
// or the X-Agentbus-User header's for an admin token or with auth off, for
// handlers that have no request at hand (A2A).
func userOf(ctx context.Context) string {
	if p, ok := ctx.Value(principalKey{}).(principal); ok {
		return p.user
	}
	u, _ := ctx.Value(headerUserKey{}).(string)
	return u
}

// roleOf is the role of a request's token ("" with auth off).
func roleOf(ctx context.Context) Role {
	if p, ok := ctx.Value(principalKey{}).(principal); ok {
		return p.role
	}
	return ""
}

// headerUserKey holds, with auth off, the user X-Agentbus-User names.
type headerUserKey struct{}

// actAsHeaderUser puts the user X-Agentbus-User names, with auth off, in
// the request context (so that A2A submissions carry it and reads are
// scoped to it, as for an admin token that names one); a bad header is a
// 400 on every route, as for an admin token.
func (g *Gateway) actAsHeaderUser(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	h := r.Header.Get(UserHeader)
	if h == "" {
		return r, true
	}
	if err := subjects.ValidUser(h); err != nil {
		writeBadUser(w, h, err)
		return r, false
	}
	return r.WithContext(context.WithValue(r.Context(), headerUserKey{}, h)), true
}

// writeBadUser answers 400 for a user header that is not a user id.
func writeBadUser(w http.ResponseWriter, value string, err error) {
	p := headerProblem(UserHeader, "%s is not a user id: %v", quoted(value), err)
	writeError(w, http.StatusBadRequest, apiError{Code: "invalid_user", Message: p.String(), Problems: []Problem{p}})
}
