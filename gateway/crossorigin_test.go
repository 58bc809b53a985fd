package gateway_test

import (
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/gateway"
	wsproto "github.com/agentbus/agentbus/gateway/ws"
)

const appOrigin = "https://app.example.com"

// TestCrossSiteWrites: with auth off (the default), a page on another
// origin cannot submit or control a workflow — not with a simple request
// (text/plain, no preflight), not with a foreign Origin, not with only
// Sec-Fetch-Site: cross-site — and nothing was submitted; the gateway's
// own pages, an allowed CORS origin and a client that is no browser (no
// Origin, no Sec-Fetch-Site: curl, the CLI) still write.
func TestCrossSiteWrites(t *testing.T) {
	s := startStack(t, func(c *gateway.Config) { c.CORS.Origins = []string{appOrigin} })
	body := func(id string) []byte { return []byte(`{"workflow_id": "` + id + `", "query": "hi"}`) }
	refused := []struct {
		name   string
		id     string
		header []string
		status int
		code   string
		in     string // the header the problem names
	}{
		{"text/plain, as fetch no-cors sends it", "csrf-plain", []string{"Content-Type", "text/plain;charset=UTF-8"}, 415, "unsupported_media_type", "Content-Type"},
		{"form", "csrf-form", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", "Content-Type"},
		{"foreign origin", "csrf-origin", []string{"Origin", "https://evil.example"}, 403, "forbidden", "Origin"},
		{"foreign origin, text/plain", "csrf-both", []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site", "Content-Type", "text/plain"}, 403, "forbidden", "Origin"},
		{"only Sec-Fetch-Site cross-site", "csrf-fetch", []string{"Sec-Fetch-Site", "cross-site"}, 403, "forbidden", "Sec-Fetch-Site"},
		{"Sec-Fetch-Site same-site", "csrf-sibling", []string{"Sec-Fetch-Site", "same-site", "Origin", "https://sibling.example.com"}, 403, "forbidden", "Origin"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			r := s.mustDo(t, http.MethodPost, "/v1/workflows", body(c.id), c.header...)
			e := wantError(t, c.name, r, c.status, c.code)
			if len(e.Error.Problems) != 1 || e.Error.Problems[0].In != gateway.InHeader || e.Error.Problems[0].Name != c.in {
				t.Errorf("problems %+v, want one naming header %s", e.Error.Problems, c.in)
			}
		})
	}
	// Control and the A2A surfaces are writes too.
	for _, p := range []string{"/v1/workflows/csrf-plain/cancel", "/v1/workflows/csrf-plain/approve", "/a2a", "/tasks/send"} {
		r := s.mustDo(t, http.MethodPost, p, []byte(`{}`), "Origin", "https://evil.example")
		wantError(t, "POST "+p+" from a foreign origin", r, http.StatusForbidden, "forbidden")
		r = s.mustDo(t, http.MethodPost, p, []byte(`{}`), "Content-Type", "text/plain")
		wantError(t, "POST "+p+" as text/plain", r, http.StatusUnsupportedMediaType, "unsupported_media_type")
	}
	// Nothing was submitted.
	for _, c := range refused {
		wantError(t, "state of "+c.id, s.mustDo(t, http.MethodGet, "/v1/workflows/"+c.id, nil), http.StatusNotFound, "not_found")
	}
	if l := s.list(t, "/v1/workflows"); len(l.Workflows) != 0 {
		t.Fatalf("refused writes left workflows %v", l.ids())
	}

	allowed := []struct {
		name   string
		id     string
		header []string
	}{
		{"same origin", "page-own", []string{"Origin", s.base, "Sec-Fetch-Site", "same-origin"}},
		{"same origin, older browser", "page-own-old", []string{"Origin", s.base}},
		{"allowed CORS origin", "page-app", []string{"Origin", appOrigin, "Sec-Fetch-Site", "cross-site"}},
		{"curl", "curl", nil},
		{"charset utf-8", "curl-charset", []string{"Content-Type", "application/json; charset=utf-8"}},
	}
	var want []string
	for _, c := range allowed {
		t.Run(c.name, func(t *testing.T) {
			r := s.mustDo(t, http.MethodPost, "/v1/workflows", body(c.id), c.header...)
			if r.Status != http.StatusAccepted {
				t.Fatalf("%s: %d %s, want 202", c.name, r.Status, r.Body)
			}
		})
		s.mustFollow(t, "/v1/workflows/"+c.id+"/events")
		want = append(want, c.id)
	}
	// A bare POST with no body (curl -X POST …/cancel) needs no Content-Type.
	if r := s.mustDo(t, http.MethodPost, "/v1/workflows/curl/cancel", nil); r.Status != http.StatusConflict {
		t.Errorf("bodiless cancel of a finished workflow: %d %s, want 409", r.Status, r.Body)
	}
	// Only the allowed ones ever ran (one orchestrator takes submissions in
	// order, so a refused one stored before them would be there by now).
	got := s.list(t, "/v1/workflows").ids()
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("workflows %v, want only %v", got, want)
	}
}

// TestCrossSiteCookie: the token cookie is refused on any cross-site
// request, a read included and even from an allowed CORS origin, while the
// same request with a bearer token from that origin works.
func TestCrossSiteCookie(t *testing.T) {
	s := startTenancy(t, func(c *gateway.Config) { c.CORS.Origins = []string{appOrigin} })
	cookie := []string{"Cookie", gateway.TokenCookie + "=" + acmeToken}
	for name, h := range map[string][]string{
		"cross-site":             {"Sec-Fetch-Site", "cross-site", "Origin", appOrigin},
		"same-site":              {"Sec-Fetch-Site", "same-site"},
		"foreign origin":         {"Origin", "https://evil.example"},
		"only Sec-Fetch-Site":    {"Sec-Fetch-Site", "cross-site"},
		"allowed origin, no SFS": {"Origin", appOrigin},
	} {
		r := s.mustDo(t, http.MethodGet, "/v1/workflows/acme-wf", nil, append(slices.Clone(cookie), h...)...)
		e := wantError(t, "GET with the cookie, "+name, r, http.StatusForbidden, "forbidden")
		if len(e.Error.Problems) != 1 || e.Error.Problems[0].In != gateway.InHeader || e.Error.Problems[0].Name != "Cookie" {
			t.Errorf("GET with the cookie, %s: problems %+v, want one naming header Cookie", name, e.Error.Problems)
		}
	}
	r := s.mustDo(t, http.MethodGet, "/v1/workflows/acme-wf", nil, append(bearer(acmeToken), "Sec-Fetch-Site", "cross-site", "Origin", appOrigin)...)
	if r.Status != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != appOrigin {
		t.Fatalf("cross-site GET with a bearer token from the allowed origin: %d %v %s", r.Status, r.Header, r.Body)
	}
	s.state(t, "/v1/workflows/acme-wf", append(slices.Clone(cookie), "Sec-Fetch-Site", "same-origin")...)
	s.state(t, "/v1/workflows/acme-wf", cookie...) // no browser headers: not a page
}

// TestCrossSiteAnyOrigin: "*" trusts every origin for writes only with
// auth on (a write then needs a bearer token a page must be given); with
// auth off it opens reads, not writes.
func TestCrossSiteAnyOrigin(t *testing.T) {
	anyOrigin := func(c *gateway.Config) { c.CORS.Origins = []string{"*"} }
	evil := []string{"Origin", "https://elsewhere.example", "Sec-Fetch-Site", "cross-site"}

	off := startGateway(t, bustest.New(t), anyOrigin)
	r := off.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query": "x"}`), evil...)
	wantError(t, `auth off, "*": a cross-site write`, r, http.StatusForbidden, "forbidden")
	if r := off.mustDo(t, http.MethodGet, "/v1/workflows", nil, evil...); r.Status != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") == "" {
		t.Fatalf(`auth off, "*": a cross-site read: %d %v`, r.Status, r.Header)
	}

	on := startStack(t, withTokens, anyOrigin)
	if r := on.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query": "x"}`), append(bearer(acmeToken), evil...)...); r.Status != http.StatusAccepted {
		t.Fatalf(`auth on, "*": a cross-site write with a bearer token: %d %s, want 202`, r.Status, r.Body)
	}
	r = on.mustDo(t, http.MethodPost, "/v1/workflows", []byte(`{"query": "x"}`), append([]string{"Cookie", gateway.TokenCookie + "=" + acmeToken}, evil...)...)
	wantError(t, `auth on, "*": a cross-site write with the cookie`, r, http.StatusForbidden, "forbidden")
}

// TestCrossSiteWebSocketControl: a WebSocket handshake is a GET, so the
// refusal of cross-site writes does not stop it; its cancel and approve
// frames are writes all the same. With auth off and "*", a page on any
// origin may watch a workflow but its control frames are refused; the
// gateway's own page and a client that is no browser may control.
func TestCrossSiteWebSocketControl(t *testing.T) {
	s := startGateway(t, bustest.New(t), func(c *gateway.Config) { c.CORS.Origins = []string{"*"} })
	bareWorkflow(t, s.env, "ws-csrf", "working")
	path := "/v1/workflows/ws-csrf/ws"

	page := s.session(t, path, "Origin", "https://elsewhere.example", "Sec-Fetch-Site", "cross-site")
	page.await("connected", ofType(gateway.FrameConnected))
	for _, frame := range []string{`{"type":"cancel","reason":"csrf"}`, `{"type":"approve","approve":true}`} {
		page.send(frame)
		r := controlResultOf(t, page.await("control_result", ofType(wsproto.FrameControlResult)))
		if r.Error != "forbidden" || r.Applied || !strings.Contains(r.Message, "elsewhere.example") {
			t.Fatalf("%s from another origin's page: %+v, want error forbidden naming the origin", frame, r)
		}
	}
	_ = page.c.CloseNow()

	// No orchestrator runs here: a control frame that is let through is
	// answered that none answered, not forbidden.
	for name, h := range map[string][]string{
		"own page": {"Origin", s.base, "Sec-Fetch-Site", "same-origin"},
		"CLI":      nil,
	} {
		ws := s.session(t, path, h...)
		ws.await("connected", ofType(gateway.FrameConnected))
		ws.send(`{"type":"cancel","reason":"mine"}`)
		if r := controlResultOf(t, ws.await("control_result", ofType(wsproto.FrameControlResult))); r.Error == "forbidden" {
			t.Fatalf("cancel from the %s: %+v, want it let through", name, r)
		}
		_ = ws.c.CloseNow()
	}
}
