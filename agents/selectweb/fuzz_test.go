package selectweb_test

import (
	"testing"

	"github.com/agentbus/agentbus/agents/selectweb"
)

// FuzzNormalizeURL checks that a normalized URL is a fixed point: two
// results deduped as one stay one however often they are normalized.
func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{"https://Example.com:443/a/?utm_source=x&b=2#top", "http://a.example:8080/%2F/", "https://a.example/p?q=1&q=2", "ftp://x", "https://[::1]:443/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, ok := selectweb.NormalizeURL(raw)
		if !ok {
			return
		}
		again, ok := selectweb.NormalizeURL(n)
		if !ok || again != n {
			t.Fatalf("NormalizeURL(%q) = %q, but NormalizeURL(%q) = %q, %v", raw, n, n, again, ok)
		}
	})
}
