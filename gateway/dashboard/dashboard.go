package dashboard

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed dist
var dist embed.FS

// ContentSecurityPolicy is sent with every answer: nothing but the page's own
// origin may provide scripts, workers (the one that follows streams),
// styles, images or connections (WebSockets to the same host included), no
// inline script or eval, no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; worker-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Patterns returns the path patterns (net/http.ServeMux syntax, without a
// method) the dashboard answers: the index, its assets and the routes of the
// application's pages, which all get index.html. It returns a new slice on
// every call.
func Patterns() []string {
	return []string{"/{$}", "/assets/", "/favicon.svg", "/workflows", "/workflows/{id}", "/agents", "/schedules", "/submit", "/login"}
}

// Handler serves the embedded dashboard. It is safe for concurrent use.
type Handler struct {
	files fs.FS
	index []byte
	// built is the modification time reported for index.html: the embedded
	// files have none, and a fixed one lets If-Modified-Since work.
	built time.Time
}

// New returns a Handler over the embedded build.
func New() (*Handler, error) {
	files, err := fs.Sub(dist, "dist")
	if err != nil {
		return nil, err
	}
	return newHandler(files)
}

func newHandler(files fs.FS) (*Handler, error) {
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		return nil, err
	}
	return &Handler{files: files, index: index}, nil
}

// ServeHTTP answers GET and HEAD: a file under /assets/ (or the favicon) as
// is, anything else with index.html, whose script reads the path.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", ContentSecurityPolicy)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if strings.HasPrefix(p, "/assets/") || p == "/favicon.svg" {
		h.asset(w, r, strings.TrimPrefix(path.Clean(p), "/"))
		return
	}
	// The page changes with every build: always revalidate it, so a new
	// build's asset names are picked up at once.
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	http.ServeContent(w, r, "index.html", h.built, bytes.NewReader(h.index))
}

// asset serves one built file. Asset names carry a hash of their content,
// so they may be cached for good; the favicon is not hashed.
func (h *Handler) asset(w http.ResponseWriter, r *http.Request, name string) {
	b, err := fs.ReadFile(h.files, name)
	if err != nil || strings.HasSuffix(name, "/") {
		http.Error(w, "no such dashboard asset", http.StatusNotFound)
		return
	}
	if strings.HasPrefix(name, "assets/") {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "public, max-age=3600")
	}
	http.ServeContent(w, r, name, h.built, bytes.NewReader(b))
}
