package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// CORSConfig lets pages on other origins call the gateway from a browser
// with a bearer token (fetch with an Authorization header). Cookies stay
// same-origin: cross-site requests carrying the token cookie are refused
// whatever this says, so no credentials mode is granted.
type CORSConfig struct {
	// Origins are the allowed origins, exactly as browsers send them
	// ("https://app.example.com", "http://localhost:5173"), or "*" for
	// any. Empty: no cross-origin access (the default).
	Origins []string
	// MaxAge is how long, in seconds, a browser may cache a preflight
	// answer; default 600.
	MaxAge int
}

func (c *CORSConfig) setDefaults() {
	if c.MaxAge == 0 {
		c.MaxAge = 600
	}
}

// Validate reports every origin that is not "*" or scheme://host[:port].
func (c CORSConfig) Validate() error {
	var errs []error
	for i, o := range c.Origins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			errs = append(errs, fmt.Errorf("gateway: cors origin #%d %q: want * or scheme://host[:port]", i, o))
		}
	}
	if c.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("gateway: cors max age %d is negative", c.MaxAge))
	}
	return errors.Join(errs...)
}

// allows reports whether origin may call the API.
func (c CORSConfig) allows(origin string) bool {
	return origin != "" && (slices.Contains(c.Origins, "*") || slices.Contains(c.Origins, strings.TrimSuffix(origin, "/")))
}

// wsOriginPatterns are the origins as coder/websocket host patterns.
func (c CORSConfig) wsOriginPatterns() []string {
	var out []string
	for _, o := range c.Origins {
		if o == "*" {
			out = append(out, "*")
			continue
		}
		if u, err := url.Parse(o); err == nil {
			out = append(out, u.Host)
		}
	}
	return out
}

// corsAllowHeaders are the request headers a cross-origin page may send.
const corsAllowHeaders = "Authorization, Content-Type, Last-Event-ID, " + TenantHeader + ", " + UserHeader

// cors adds the CORS answer headers for an allowed origin and answers a
// preflight itself; it reports whether the request is fully answered.
// Preflights carry no credentials, so this runs before authentication.
func (g *Gateway) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	if origin == "" || len(g.cfg.CORS.Origins) == 0 {
		if preflight {
			writeError(w, http.StatusForbidden, apiError{Code: "forbidden", Message: "cross-origin requests are not enabled on this gateway (--cors-origins)"})
			return true
		}
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	if !g.cfg.CORS.allows(origin) {
		if preflight {
			writeError(w, http.StatusForbidden, apiError{Code: "forbidden", Message: "origin " + origin + " may not call this gateway (--cors-origins)"})
			return true
		}
		return false // the browser withholds the answer: no allow header
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if !preflight {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST")
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", strconv.Itoa(g.cfg.CORS.MaxAge))
	w.WriteHeader(http.StatusNoContent)
	return true
}
