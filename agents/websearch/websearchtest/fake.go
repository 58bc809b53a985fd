// Package websearchtest is a fake web search provider for tests: one
// local HTTP server that speaks the documented JSON of the Tavily API
// (POST /search, POST /extract), a SearXNG instance (GET /search with
// format=json) and the Brave Search API (GET /res/v1/web/search), with
// their authentication, and that can be told to fail (429 with
// Retry-After, 401, 500) before it answers.
package websearchtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Page is one page the fake knows: every search returns its pages in
// order (a fake has no ranking), up to the request's limit.
type Page struct {
	URL, Title, Snippet string
	// Content is the page's text: Tavily's raw_content, Brave's extra
	// snippets, what /extract returns.
	Content string
	Score   float64
}

// Failure is an answer given instead of a result.
type Failure struct {
	Status int
	// RetryAfter is sent as the Retry-After header when not empty.
	RetryAfter string
}

// Request is one request the fake received.
type Request struct {
	Method, Path string
	Query        string
	Header       http.Header
	Body         map[string]any
	At           time.Time
}

// Fake is the fake provider. Its methods are safe for concurrent use.
type Fake struct {
	// URL is the server's base URL.
	URL string
	// Key is the API key Tavily and Brave requests must carry.
	Key string

	mu       sync.Mutex
	pages    []Page
	failures []Failure // next answers, first first
	always   *Failure
	requests []Request
}

// New starts a fake that knows pages and accepts key; it stops with the
// test.
func New(t testing.TB, key string, pages ...Page) *Fake {
	t.Helper()
	f := &Fake{Key: key, pages: pages}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// SetPages replaces the pages the fake knows.
func (f *Fake) SetPages(pages ...Page) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pages = pages
}

// FailNext makes the next len(fs) requests fail as given.
func (f *Fake) FailNext(fs ...Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, fs...)
}

// FailAlways makes every request fail as given (nil: answer again).
func (f *Fake) FailAlways(fl *Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.always = fl
}

// Requests returns the requests received so far.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), At: time.Now()}
	if r.Method == http.MethodPost {
		_ = json.NewDecoder(r.Body).Decode(&rec.Body)
	}
	f.mu.Lock()
	f.requests = append(f.requests, rec)
	var fail *Failure
	switch {
	case len(f.failures) > 0:
		fail = &f.failures[0]
		f.failures = f.failures[1:]
	case f.always != nil:
		fail = f.always
	}
	pages := append([]Page(nil), f.pages...)
	f.mu.Unlock()
	if fail != nil {
		if fail.RetryAfter != "" {
			w.Header().Set("Retry-After", fail.RetryAfter)
		}
		writeJSON(w, fail.Status, map[string]any{"detail": map[string]string{"error": http.StatusText(fail.Status)}})
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/search":
		f.tavilySearch(w, r, rec.Body, pages)
	case r.Method == http.MethodPost && r.URL.Path == "/extract":
		f.tavilyExtract(w, r, rec.Body, pages)
	case r.Method == http.MethodGet && r.URL.Path == "/search":
		searxng(w, r, pages)
	case r.Method == http.MethodGet && r.URL.Path == "/res/v1/web/search":
		f.brave(w, r, pages)
	default:
		http.NotFound(w, r)
	}
}

func (f *Fake) tavilySearch(w http.ResponseWriter, r *http.Request, body map[string]any, pages []Page) {
	if r.Header.Get("Authorization") != "Bearer "+f.Key {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"detail": map[string]string{"error": "Unauthorized: missing or invalid API key."}})
		return
	}
	q, _ := body["query"].(string)
	if q == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"detail": map[string]string{"error": "query is required"}})
		return
	}
	n := len(pages)
	if m, ok := body["max_results"].(float64); ok && int(m) < n {
		n = int(m)
	}
	raw, _ := body["include_raw_content"].(bool)
	results := []map[string]any{}
	for i, p := range pages[:n] {
		res := map[string]any{"title": p.Title, "url": p.URL, "content": p.Snippet, "score": score(p, i), "raw_content": nil}
		if raw && p.Content != "" {
			res["raw_content"] = p.Content
		}
		if body["topic"] == "news" {
			res["published_date"] = "Mon, 23 Nov 2026 09:00:00 GMT"
		}
		results = append(results, res)
	}
	writeJSON(w, http.StatusOK, map[string]any{"query": q, "answer": nil, "images": []string{}, "follow_up_questions": nil,
		"results": results, "response_time": 0.42})
}

func (f *Fake) tavilyExtract(w http.ResponseWriter, r *http.Request, body map[string]any, pages []Page) {
	if r.Header.Get("Authorization") != "Bearer "+f.Key {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"detail": map[string]string{"error": "Unauthorized: missing or invalid API key."}})
		return
	}
	urls, _ := body["urls"].([]any)
	results, failed := []map[string]any{}, []map[string]any{}
	for _, u := range urls {
		s, _ := u.(string)
		found := false
		for _, p := range pages {
			if p.URL == s && p.Content != "" {
				results = append(results, map[string]any{"url": s, "raw_content": p.Content, "images": []string{}})
				found = true
				break
			}
		}
		if !found {
			failed = append(failed, map[string]any{"url": s, "error": "Failed to fetch url"})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": results, "failed_results": failed, "response_time": 0.1})
}

func searxng(w http.ResponseWriter, r *http.Request, pages []Page) {
	q := r.URL.Query()
	if q.Get("format") != "json" {
		http.Error(w, "format not allowed", http.StatusForbidden)
		return
	}
	results := []map[string]any{}
	for i, p := range pages {
		results = append(results, map[string]any{"url": p.URL, "title": p.Title, "content": p.Snippet, "engine": "duckduckgo",
			"engines": []string{"duckduckgo", "brave"}, "parsed_url": []string{"https", "example", p.URL, "", "", ""}, "template": "default.html",
			"positions": []int{i + 1}, "score": score(p, i), "category": q.Get("categories"), "publishedDate": nil})
	}
	writeJSON(w, http.StatusOK, map[string]any{"query": q.Get("q"), "number_of_results": len(results), "results": results,
		"answers": []string{}, "corrections": []string{}, "infoboxes": []any{}, "suggestions": []string{}, "unresponsive_engines": []any{}})
}

func (f *Fake) brave(w http.ResponseWriter, r *http.Request, pages []Page) {
	if r.Header.Get("X-Subscription-Token") != f.Key {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"type": "ErrorResponse", "error": map[string]any{
			"id": "e1", "status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid."}})
		return
	}
	n := len(pages)
	if c, err := strconv.Atoi(r.URL.Query().Get("count")); err == nil && c < n {
		n = c
	}
	results := []map[string]any{}
	for _, p := range pages[:n] {
		res := map[string]any{"type": "search_result", "title": p.Title, "url": p.URL, "description": "<strong>" + p.Snippet + "</strong>",
			"is_source_local": false, "meta_url": map[string]string{"scheme": "https", "hostname": host(p.URL)}, "page_age": "2026-11-20T00:00:00"}
		if p.Content != "" && r.URL.Query().Get("extra_snippets") == "true" {
			res["extra_snippets"] = []string{p.Content}
		}
		results = append(results, res)
	}
	writeJSON(w, http.StatusOK, map[string]any{"type": "search", "query": map[string]any{"original": r.URL.Query().Get("q")},
		"web": map[string]any{"type": "search", "results": results}})
}

func score(p Page, i int) float64 {
	if p.Score != 0 {
		return p.Score
	}
	return 1 - float64(i)/100
}

func host(u string) string {
	s := strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://")
	h, _, _ := strings.Cut(s, "/")
	return h
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
