package websearch_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents/websearch"
	"github.com/agentbus/agentbus/agents/websearch/websearchtest"
)

var pages = []websearchtest.Page{
	{URL: "https://nats.io/blog/2026-release", Title: "NATS 2026 release", Snippet: "The 2026 release of NATS brings JetStream batch publishing.", Content: "Full text of the release notes: JetStream batch publishing and more."},
	{URL: "https://example.org/guide.pdf", Title: "A guide", Snippet: "A guide to consumers, acknowledgements and flow control in JetStream."},
}

func provider(t *testing.T, name string, f *websearchtest.Fake, key string) websearch.Provider {
	t.Helper()
	p, err := websearch.NewProvider(websearch.ProviderConfig{Name: name, BaseURL: f.URL, APIKey: key,
		Retry: websearch.Retry{Attempts: 3, Base: 10 * time.Millisecond, MaxWait: 3 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestWebProvidersSearchTheDocumentedAPIs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		query websearch.Query
		check func(t *testing.T, r websearchtest.Request)
		// content says whether the first result carries the page's text.
		content bool
	}{
		{websearch.ProviderTavily, websearch.Query{Text: "latest nats", MaxResults: 5, Depth: "advanced", Topic: "news", RawContent: true},
			func(t *testing.T, r websearchtest.Request) {
				if r.Method != http.MethodPost || r.Path != "/search" || r.Header.Get("Authorization") != "Bearer k1" {
					t.Errorf("request %s %s auth %q", r.Method, r.Path, r.Header.Get("Authorization"))
				}
				b := r.Body
				if b["query"] != "latest nats" || b["search_depth"] != "advanced" || b["topic"] != "news" || b["max_results"] != 5.0 || b["include_raw_content"] != true {
					t.Errorf("body %v", b)
				}
			}, true},
		{websearch.ProviderSearXNG, websearch.Query{Text: "latest nats", MaxResults: 1, Topic: "news"},
			func(t *testing.T, r websearchtest.Request) {
				if r.Method != http.MethodGet || r.Path != "/search" || !strings.Contains(r.Query, "format=json") ||
					!strings.Contains(r.Query, "q=latest+nats") || !strings.Contains(r.Query, "categories=news") {
					t.Errorf("request %s %s?%s", r.Method, r.Path, r.Query)
				}
			}, false},
		{websearch.ProviderBrave, websearch.Query{Text: "latest nats", MaxResults: 5},
			func(t *testing.T, r websearchtest.Request) {
				if r.Method != http.MethodGet || r.Path != "/res/v1/web/search" || r.Header.Get("X-Subscription-Token") != "k1" ||
					!strings.Contains(r.Query, "q=latest+nats") || !strings.Contains(r.Query, "count=5") {
					t.Errorf("request %s %s?%s token %q", r.Method, r.Path, r.Query, r.Header.Get("X-Subscription-Token"))
				}
			}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := websearchtest.New(t, "k1", pages...)
			res, err := provider(t, tc.name, f, "k1").Search(ctx(t), tc.query)
			if err != nil {
				t.Fatal(err)
			}
			want := len(pages)
			if tc.query.MaxResults < want {
				want = tc.query.MaxResults
			}
			if len(res) != want {
				t.Fatalf("%d results, want %d: %+v", len(res), want, res)
			}
			r := res[0]
			if r.URL != pages[0].URL || r.Title != pages[0].Title || r.Snippet != pages[0].Snippet || r.Score <= 0 {
				t.Errorf("first result %+v", r)
			}
			if got := r.Content != ""; got != tc.content {
				t.Errorf("content %q, want some: %v", r.Content, tc.content)
			}
			tc.check(t, f.Requests()[0])
		})
	}
}

func TestWebTavilyExtract(t *testing.T) {
	f := websearchtest.New(t, "k1", pages...)
	p := provider(t, websearch.ProviderTavily, f, "k1")
	got, err := p.(websearch.Extractor).Extract(ctx(t), []string{pages[0].URL, pages[1].URL})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Content != pages[0].Content || got[1].Content != "" || got[1].Error == "" {
		t.Fatalf("pages %+v", got)
	}
	r := f.Requests()[0]
	if r.Path != "/extract" || r.Header.Get("Authorization") != "Bearer k1" || len(r.Body["urls"].([]any)) != 2 {
		t.Fatalf("request %s %v", r.Path, r.Body)
	}
}

func TestWebProviderErrors(t *testing.T) {
	for _, name := range websearch.Providers() {
		t.Run(name, func(t *testing.T) {
			t.Run("429 honours Retry-After then succeeds", func(t *testing.T) {
				f := websearchtest.New(t, "k1", pages...)
				f.FailNext(websearchtest.Failure{Status: http.StatusTooManyRequests, RetryAfter: "1"})
				res, err := provider(t, name, f, "k1").Search(ctx(t), websearch.Query{Text: "q", MaxResults: 5})
				if err != nil || len(res) == 0 {
					t.Fatalf("after one 429: %v, %d results", err, len(res))
				}
				rs := f.Requests()
				if len(rs) != 2 {
					t.Fatalf("%d requests, want 2", len(rs))
				}
				if gap := rs[1].At.Sub(rs[0].At); gap < 900*time.Millisecond {
					t.Fatalf("retried after %s, Retry-After said 1s", gap)
				}
			})
			t.Run("429 throughout is a retriable rate limit", func(t *testing.T) {
				f := websearchtest.New(t, "k1", pages...)
				f.FailAlways(&websearchtest.Failure{Status: http.StatusTooManyRequests, RetryAfter: "0"})
				_, err := provider(t, name, f, "k1").Search(ctx(t), websearch.Query{Text: "q"})
				var pe *websearch.ProviderError
				if !errors.Is(err, websearch.ErrRateLimited) || !errors.As(err, &pe) || pe.Permanent() {
					t.Fatalf("err %v", err)
				}
				if n := len(f.Requests()); n != 3 {
					t.Fatalf("%d requests, want 3 attempts", n)
				}
			})
			t.Run("Retry-After beyond the bound is not waited for", func(t *testing.T) {
				f := websearchtest.New(t, "k1", pages...)
				f.FailAlways(&websearchtest.Failure{Status: http.StatusTooManyRequests, RetryAfter: "3600"})
				start := time.Now()
				_, err := provider(t, name, f, "k1").Search(ctx(t), websearch.Query{Text: "q"})
				if !errors.Is(err, websearch.ErrRateLimited) || time.Since(start) > 2*time.Second || len(f.Requests()) != 1 {
					t.Fatalf("err %v after %s and %d requests", err, time.Since(start), len(f.Requests()))
				}
			})
			t.Run("401 names the key variable", func(t *testing.T) {
				f := websearchtest.New(t, "right", pages...)
				if name == websearch.ProviderSearXNG {
					f.FailAlways(&websearchtest.Failure{Status: http.StatusForbidden})
				}
				_, err := provider(t, name, f, "wrong").Search(ctx(t), websearch.Query{Text: "q"})
				var pe *websearch.ProviderError
				if !errors.Is(err, websearch.ErrUnauthorized) || !errors.As(err, &pe) || !pe.Permanent() {
					t.Fatalf("err %v", err)
				}
				if env := websearch.KeyEnv(name); env != "" && !strings.Contains(err.Error(), env) {
					t.Fatalf("message does not name %s: %v", env, err)
				}
				if len(f.Requests()) != 1 {
					t.Fatalf("a refused key was retried: %d requests", len(f.Requests()))
				}
			})
			t.Run("network failure is retriable", func(t *testing.T) {
				p, err := websearch.NewProvider(websearch.ProviderConfig{Name: name, BaseURL: "http://127.0.0.1:1", APIKey: "k"})
				if err != nil {
					t.Fatal(err)
				}
				_, err = p.Search(ctx(t), websearch.Query{Text: "q"})
				var pe *websearch.ProviderError
				if err == nil || errors.As(err, &pe) {
					t.Fatalf("err %v", err)
				}
			})
		})
	}
}

func TestWebProviderConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  websearch.ProviderConfig
		want string
	}{
		{websearch.ProviderConfig{Name: "tavily"}, "TAVILY_API_KEY"},
		{websearch.ProviderConfig{Name: "brave"}, "BRAVE_API_KEY"},
		{websearch.ProviderConfig{Name: "searxng"}, "base URL"},
		{websearch.ProviderConfig{Name: "bing"}, "want one of tavily, searxng, brave"},
		{websearch.ProviderConfig{Name: "tavily", APIKey: "k", BaseURL: "ftp://x"}, "want http"},
	} {
		_, err := websearch.NewProvider(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
