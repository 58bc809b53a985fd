package dashboard

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// sourcesDigest is web/scripts/stamp.mjs's digest of the dashboard's
// sources, computed the same way: for each file in path order, its
// repository path, a newline, the hex SHA-256 of its content, a newline.
func sourcesDigest(t *testing.T, repo string) string {
	t.Helper()
	files := []string{"web/index.html", "web/package.json", "web/package-lock.json", "web/tsconfig.json", "web/vite.config.ts",
		"schemas/plan.json", "schemas/workflow.request.json"}
	for _, dir := range []string{"web/src", "web/public"} {
		err := filepath.WalkDir(filepath.Join(repo, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if strings.HasSuffix(p, ".test.ts") || strings.HasSuffix(p, ".test.tsx") {
				return nil
			}
			rel, err := filepath.Rel(repo, p)
			files = append(files, filepath.ToSlash(rel))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		c := sha256.Sum256(b)
		h.Write([]byte(f + "\n" + hex.EncodeToString(c[:]) + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestDistIsFresh fails when web/ changed after the assets were last built:
// run `make web` and commit gateway/dashboard/dist.
func TestDistIsFresh(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, "web/package.json")); err != nil {
		t.Skip("no web/ beside this package (a copy of the module without its sources)")
	}
	stamp, err := fs.ReadFile(dist, "dist/sources.sha256")
	if err != nil {
		t.Fatalf("no dist/sources.sha256: run `make web`: %v", err)
	}
	if got, want := strings.TrimSpace(string(stamp)), sourcesDigest(t, repo); got != want {
		t.Fatalf("gateway/dashboard/dist is stale: web/ changed since the last build (built from %s, sources now %s): run `make web` and commit gateway/dashboard/dist", got[:12], want[:12])
	}
}

func TestHandler(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	index, _ := fs.ReadFile(dist, "dist/index.html")
	var asset string
	entries, _ := fs.ReadDir(dist, "dist/assets")
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".js") {
			asset = "/assets/" + e.Name()
		}
	}
	if asset == "" {
		t.Fatal("no built script in dist/assets")
	}
	if !strings.Contains(string(index), asset) {
		t.Fatalf("index.html does not load %s", asset)
	}
	cases := []struct {
		name, method, path string
		status             int
		cache, typ         string
	}{
		{"index", "GET", "/", 200, "no-cache", "text/html"},
		{"a page route", "GET", "/workflows/wf-1", 200, "no-cache", "text/html"},
		{"login", "GET", "/login?next=/agents", 200, "no-cache", "text/html"},
		{"HEAD", "HEAD", "/agents", 200, "no-cache", "text/html"},
		{"schedules", "GET", "/schedules", 200, "no-cache", "text/html"},
		{"hashed asset", "GET", asset, 200, "public, max-age=31536000, immutable", "text/javascript"},
		{"favicon", "GET", "/favicon.svg", 200, "public, max-age=3600", "image/svg+xml"},
		{"unknown asset", "GET", "/assets/nope.js", 404, "", "text/plain"},
		{"asset directory", "GET", "/assets/", 404, "", "text/plain"},
		{"escape attempt", "GET", "/assets/../../dashboard.go", 404, "", "text/plain"},
		{"POST", "POST", "/", 405, "", "text/plain"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.status, rec.Body)
			}
			if got := rec.Header().Get("Cache-Control"); got != c.cache {
				t.Errorf("Cache-Control %q, want %q", got, c.cache)
			}
			if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, c.typ) {
				t.Errorf("Content-Type %q, want %s", got, c.typ)
			}
			if got := rec.Header().Get("Content-Security-Policy"); got != ContentSecurityPolicy {
				t.Errorf("CSP %q", got)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no nosniff")
			}
			if c.status == 200 && c.typ == "text/html" && c.method == "GET" && rec.Body.String() != string(index) {
				t.Error("not index.html")
			}
		})
	}
}

func TestCSPIsStrict(t *testing.T) {
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "*", "http:", "https:"} {
		if strings.Contains(ContentSecurityPolicy, bad) {
			t.Errorf("the policy allows %s", bad)
		}
	}
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "worker-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(ContentSecurityPolicy, want) {
			t.Errorf("the policy lacks %s", want)
		}
	}
}

func TestPatternsAreCopies(t *testing.T) {
	p := Patterns()
	p[0] = "changed"
	if Patterns()[0] == "changed" {
		t.Fatal("Patterns shares its slice")
	}
	mux := http.NewServeMux()
	for _, p := range Patterns() {
		mux.Handle("GET "+p, http.NotFoundHandler()) // panics on a bad or conflicting pattern
	}
}
