package gateway

import (
	"net/http"
	"strings"
)

// noRoute answers a request no route matches, in the API's error shape
// rather than http.ServeMux's text/plain: 405 with the mux's Allow header
// when the path is known under other methods, else 404. It reports false
// when the mux would redirect instead (a path to clean, e.g. "/v1//agents"),
// which is no error: the caller serves the redirect.
func noRoute(w http.ResponseWriter, r *http.Request, mux interface {
	Handler(*http.Request) (http.Handler, string)
}) bool {
	h, _ := mux.Handler(r)
	// The mux decides 404 against 405 (and which methods are allowed) in
	// the handler it returns: run it against a writer that keeps only the
	// status and headers.
	probe := &headerCapture{header: http.Header{}}
	h.ServeHTTP(probe, r)
	switch {
	case probe.status >= 300 && probe.status < 400:
		return false
	case probe.status == http.StatusMethodNotAllowed:
		allow := probe.header.Get("Allow")
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, apiError{Code: "method_not_allowed",
			Message: "method " + r.Method + " is not allowed on " + quoted(r.URL.Path) + ": use " + strings.ReplaceAll(allow, ", ", " or ")})
	default:
		writeError(w, http.StatusNotFound, apiError{Code: "not_found", Message: "no route " + r.Method + " " + quoted(r.URL.Path) + " (see the API in the README)"})
	}
	return true
}

// headerCapture is a ResponseWriter that keeps the status and headers and
// drops the body.
type headerCapture struct {
	header http.Header
	status int
}

func (c *headerCapture) Header() http.Header { return c.header }

func (c *headerCapture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return len(b), nil
}

func (c *headerCapture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}
