package gateway

import (
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
)

// Cross-site writes. A page on any origin can send a "simple" request — a
// POST whose Content-Type is text/plain, a form's or none — without a CORS
// preflight, and the browser delivers it even though the page cannot read
// the answer: CORS alone does not stop it from submitting or cancelling a
// workflow, with auth off (the default) or with an ambient credential (the
// token cookie). So, with auth on or off:
//
//   - a state-changing request (every method but GET, HEAD and OPTIONS)
//     whose Origin is present and neither the gateway's own (its host is the
//     request's Host) nor one of CORSConfig.Origins, or that says
//     Sec-Fetch-Site: cross-site (or same-site) without such an Origin, is
//     refused 403 — http.CrossOriginProtection decides, with the CORS
//     origins trusted; a request with neither header (curl, the CLI, a
//     server) is not a browser's and passes;
//   - its body must be application/json (415 otherwise), which a page can
//     only send after a preflight that CORSConfig grants or refuses;
//   - a request authenticated by the token cookie is refused 403 if it is
//     cross-site at all, even a GET (a page could otherwise open a
//     workflow's events with the user's cookie) and even from a CORS origin
//     (CORS grants no credentials mode).
//
// "*" among the CORS origins trusts every origin for writes only when auth
// is on: then a write needs a bearer token, which a page holds only if
// given one, and the cookie is never accepted cross-site. With auth off
// every request acts with full rights, so "*" opens reads only and writes
// from other pages must name their origin.

// newWriteProtection makes the protection of state-changing requests:
// CrossOriginProtection trusting the CORS origins, its refusal answered in
// the API's error shape. It is nil when nothing is to be refused ("*" with
// auth on).
func newWriteProtection(cors CORSConfig, authOn bool) (*http.CrossOriginProtection, error) {
	if authOn && slices.Contains(cors.Origins, "*") {
		return nil, nil
	}
	p := http.NewCrossOriginProtection()
	for _, o := range cors.Origins {
		if o == "*" {
			continue
		}
		if err := p.AddTrustedOrigin(strings.TrimSuffix(o, "/")); err != nil {
			return nil, fmt.Errorf("gateway: cors origin %q: %w", o, err)
		}
	}
	p.SetDenyHandler(http.HandlerFunc(denyCrossOrigin))
	return p, nil
}

// denyCrossOrigin answers a refused cross-site write: 403, naming the
// header that gave it away.
func denyCrossOrigin(w http.ResponseWriter, r *http.Request) {
	var p Problem
	if o := r.Header.Get("Origin"); o != "" {
		p = headerProblem("Origin", "%s is neither this gateway's origin (host %s) nor one of its --cors-origins", quoted(o), quoted(r.Host))
	} else {
		p = headerProblem("Sec-Fetch-Site", "%s: a page on another site may not change anything here", quoted(r.Header.Get("Sec-Fetch-Site")))
	}
	writeError(w, http.StatusForbidden, apiError{Code: "forbidden", Message: "cross-origin " + r.Method + " refused: " + p.String(), Problems: []Problem{p}})
}

// cookieCrossSite reports why a request carrying the token cookie is not
// same-origin, or nil. CrossOriginProtection lets safe methods through,
// but a cookie must not work cross-site for any method: it is asked about
// the request as if it were a POST (cookie has no trusted origins, since
// CORS grants no credentials).
func cookieCrossSite(cookie *http.CrossOriginProtection, r *http.Request) error {
	probe := *r // shallow: only the method differs
	probe.Method = http.MethodPost
	return cookie.Check(&probe)
}

// crossSiteWrite reports why a request would be refused as a cross-site
// write, or nil, whatever its method: a WebSocket handshake is a GET, which
// the protection lets through, yet its control frames cancel and approve.
// A socket that fails this may watch but not control ("*" with auth off
// lets any page read, not write).
func (g *Gateway) crossSiteWrite(r *http.Request) error {
	if g.writes == nil {
		return nil
	}
	return cookieCrossSite(g.writes, r) // the same probe: r as if it were a POST
}

// safeMethod reports whether a request's method changes nothing.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// jsonBody checks a state-changing request's Content-Type: application/json
// (charset, if given, utf-8), or none with an empty body (a bare POST …/cancel
// has nothing to misread). It answers 415 and reports false otherwise.
func jsonBody(w http.ResponseWriter, r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return true
	}
	var msg string
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case ct == "":
		msg = "missing: a request body must be sent as application/json"
	case err != nil:
		msg = fmt.Sprintf("%s is not a media type: want application/json", quoted(ct))
	case mt != "application/json":
		msg = fmt.Sprintf("%s: want application/json", quoted(ct))
	case params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8"):
		msg = fmt.Sprintf("%s: JSON is UTF-8, want application/json or application/json; charset=utf-8", quoted(ct))
	default:
		return true
	}
	p := headerProblem("Content-Type", "%s", msg)
	w.Header().Set("Accept", "application/json")
	writeError(w, http.StatusUnsupportedMediaType, apiError{Code: "unsupported_media_type", Message: p.String(), Problems: []Problem{p}})
	return false
}
