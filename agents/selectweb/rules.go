package selectweb

import (
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Rule names, as the output's dropped entries carry them.
const (
	RuleInvalidURL = "invalid_url"
	RuleDuplicate  = "duplicate"
	RuleBlocked    = "blocked_domain"
	RuleNoindex    = "noindex"
	RuleTooShort   = "too_short"
	RuleTopK       = "below_top_k"
)

// trackingParams are query parameters that name a campaign, not a page.
var trackingParams = []string{"utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "gclid", "fbclid", "mc_cid", "mc_eid", "ref_src"}

// NormalizeURL returns the form of a page's URL that dedupes it: http(s)
// only, scheme and host lowercased, default port, fragment, tracking
// parameters and a trailing slash removed, the remaining query sorted.
// It reports false for a URL that is not an absolute http(s) URL.
func NormalizeURL(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Hostname() == "" {
		return "", false
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", false
	}
	host := strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" && !(u.Scheme == "http" && p == "80") && !(u.Scheme == "https" && p == "443") {
		host = net.JoinHostPort(host, p)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6
	}
	u.Host, u.Fragment, u.RawFragment, u.User = host, "", "", nil
	q := u.Query()
	for k := range q {
		if slices.Contains(trackingParams, strings.ToLower(k)) {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode() // sorted by key
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u.String(), true
}

// domainOf is a normalized URL's host without port and "www.".
func domainOf(normalized string) string {
	u, err := url.Parse(normalized)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.Hostname(), "www.")
}

// blockedBy returns the blocked domain host is, or is a subdomain of.
func blockedBy(host string, blocked []string) (string, bool) {
	for _, b := range blocked {
		b = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(b)), "www.")
		if b != "" && (host == b || strings.HasSuffix(host, "."+b)) {
			return b, true
		}
	}
	return "", false
}

// noindexMarkers find a page that asks not to be indexed: a robots (or
// googlebot) meta tag with noindex or none, an X-Robots-Tag line, or a
// bare "robots: noindex" directive in extracted text.
var noindexMarkers = []*regexp.Regexp{
	regexp.MustCompile(`(?i)<meta[^>]+name\s*=\s*["']?(robots|googlebot)["']?[^>]*content\s*=\s*["'][^"']*\b(noindex|none)\b`),
	regexp.MustCompile(`(?i)<meta[^>]+content\s*=\s*["'][^"']*\b(noindex|none)\b[^"']*["'][^>]*name\s*=\s*["']?(robots|googlebot)\b`),
	regexp.MustCompile(`(?i)\bx-robots-tag\s*:\s*[^\n]*\b(noindex|none)\b`),
	regexp.MustCompile(`(?i)\brobots\s*[:=]\s*["']?[^\n"']*\bnoindex\b`),
}

// noindex returns the marker found in text, if any.
func noindex(text string) (string, bool) {
	for _, re := range noindexMarkers {
		if m := re.FindString(text); m != "" {
			if len(m) > 80 {
				m = m[:80] + "…"
			}
			return m, true
		}
	}
	return "", false
}

// isPDF reports whether a normalized URL names a PDF.
func isPDF(normalized string) bool {
	u, err := url.Parse(normalized)
	return err == nil && strings.HasSuffix(strings.ToLower(u.Path), ".pdf")
}
