package selectweb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/selectweb"
)

const long = "A snippet long enough to pass the forty character minimum of the rules."

func res(url string, score float64) selectweb.Result {
	return selectweb.Result{URL: url, Title: "t " + url, Snippet: long, Score: score}
}

func TestWebSelectRules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     selectweb.Config
		results []selectweb.Result
		kept    []string          // document ids, in order
		dropped map[string]string // url → rule
	}{
		{name: "keeps a good result with its normalized URL",
			results: []selectweb.Result{res("HTTPS://Example.COM:443/a/?utm_source=x&b=2#top", 0.5)},
			kept:    []string{"https://example.com/a?b=2"}},
		{name: "drops what is not an http URL",
			results: []selectweb.Result{res("ftp://example.com/f", 1), res("not a url", 1), res("", 1)},
			dropped: map[string]string{"ftp://example.com/f": selectweb.RuleInvalidURL, "not a url": selectweb.RuleInvalidURL, "": selectweb.RuleInvalidURL}},
		{name: "dedupes by normalized URL, first kept",
			results: []selectweb.Result{res("https://example.com/a", 0.9), res("https://EXAMPLE.com/a/#x", 0.8), res("https://example.com/a?utm_campaign=z", 0.7)},
			kept:    []string{"https://example.com/a"},
			dropped: map[string]string{"https://EXAMPLE.com/a/#x": selectweb.RuleDuplicate, "https://example.com/a?utm_campaign=z": selectweb.RuleDuplicate}},
		{name: "blocked domains and their subdomains (defaults)",
			results: []selectweb.Result{res("https://www.pinterest.com/pin/1", 1), res("https://m.facebook.com/x", 1), res("https://notfacebook.com/x", 1)},
			kept:    []string{"https://notfacebook.com/x"},
			dropped: map[string]string{"https://www.pinterest.com/pin/1": selectweb.RuleBlocked, "https://m.facebook.com/x": selectweb.RuleBlocked}},
		{name: "configured blocked list replaces the defaults",
			cfg:     selectweb.Config{Blocked: []string{"spam.example"}},
			results: []selectweb.Result{res("https://a.spam.example/x", 1), res("https://pinterest.com/p", 0.5)},
			kept:    []string{"https://pinterest.com/p"},
			dropped: map[string]string{"https://a.spam.example/x": selectweb.RuleBlocked}},
		{name: "noindex and robots markers in content",
			results: []selectweb.Result{
				{URL: "https://a.example/1", Snippet: long, Content: `<html><head><meta name="robots" content="noindex, nofollow"></head>`},
				{URL: "https://a.example/2", Snippet: long, Content: `<meta content="none" name="googlebot">`},
				{URL: "https://a.example/3", Snippet: long, Content: "HTTP/1.1 200 OK\nX-Robots-Tag: noindex\n"},
				{URL: "https://a.example/4", Snippet: long, Content: "This page talks about the noindex directive of robots.txt in general."},
			},
			kept: []string{"https://a.example/4"},
			dropped: map[string]string{"https://a.example/1": selectweb.RuleNoindex, "https://a.example/2": selectweb.RuleNoindex,
				"https://a.example/3": selectweb.RuleNoindex}},
		{name: "a snippet under 40 characters is too short; content stands in for a missing snippet",
			results: []selectweb.Result{
				{URL: "https://a.example/short", Snippet: "Too short to say anything.", Content: strings.Repeat("long content ", 10)},
				{URL: "https://a.example/nosnippet", Content: long},
				{URL: "https://a.example/exactly40", Snippet: strings.Repeat("x", 40)},
			},
			kept:    []string{"https://a.example/nosnippet", "https://a.example/exactly40"},
			dropped: map[string]string{"https://a.example/short": selectweb.RuleTooShort}},
		{name: "top 5 by score, PDFs first",
			results: []selectweb.Result{res("https://a.example/1", 0.9), res("https://a.example/2", 0.8), res("https://a.example/3", 0.95),
				res("https://a.example/4", 0.1), res("https://a.example/5", 0.7), res("https://a.example/paper.PDF", 0.2), res("https://a.example/6", 0.6)},
			kept:    []string{"https://a.example/paper.PDF", "https://a.example/3", "https://a.example/1", "https://a.example/2", "https://a.example/5"},
			dropped: map[string]string{"https://a.example/6": selectweb.RuleTopK, "https://a.example/4": selectweb.RuleTopK}},
		{name: "PDF preference off",
			cfg:     selectweb.Config{KeepPDFLast: true, TopK: 1},
			results: []selectweb.Result{res("https://a.example/paper.pdf", 0.2), res("https://a.example/page", 0.9)},
			kept:    []string{"https://a.example/page"},
			dropped: map[string]string{"https://a.example/paper.pdf": selectweb.RuleTopK}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := selectweb.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			out := a.Select(selectweb.Batch{Provider: "fake", Results: tc.results})
			var kept []string
			for _, d := range out.Documents {
				kept = append(kept, d.ID)
				if d.Source != d.ID || d.Metadata["url"] != d.ID || d.Metadata["provider"] != "fake" || d.Text == "" {
					t.Errorf("document %+v", d)
				}
			}
			if !slices.Equal(kept, tc.kept) {
				t.Errorf("kept %q, want %q", kept, tc.kept)
			}
			got := map[string]string{}
			for _, d := range out.Dropped {
				got[d.URL] = d.Rule
				if d.Reason == "" {
					t.Errorf("dropped %s without a reason", d.URL)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(orEmpty(tc.dropped)) {
				t.Errorf("dropped %v, want %v", got, tc.dropped)
			}
			if len(out.Documents)+len(out.Dropped) != len(tc.results) {
				t.Errorf("%d kept + %d dropped of %d results", len(out.Documents), len(out.Dropped), len(tc.results))
			}
		})
	}
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func TestWebSelectReadsDependencies(t *testing.T) {
	a, err := selectweb.New(selectweb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dep := func(rs ...selectweb.Result) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"provider": "tavily", "results": rs})
		return b
	}
	content := selectweb.Result{URL: "https://b.example/x", Title: "B", Snippet: long, Content: "The whole page text, which is what gets indexed.", Score: 0.5}
	req := agents.Request{StepID: "select", Query: "q", Input: json.RawMessage(`{"query":"q"}`), DependencyOutputs: map[string]json.RawMessage{
		"web_search":   dep(res("https://a.example/x", 0.9), content),
		"web_search-2": dep(res("https://a.example/x/", 0.99)),
		"other":        json.RawMessage(`null`),
	}}
	raw, err := a.Handle(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out selectweb.Output
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Documents) != 2 || len(out.Dropped) != 1 || out.Dropped[0].Rule != selectweb.RuleDuplicate {
		t.Fatalf("output %s", raw)
	}
	if out.Documents[1].Text != content.Content || out.Documents[1].Metadata["provider"] != "tavily" {
		t.Fatalf("the page's content is not the document's text: %+v", out.Documents[1])
	}
	// The shape the ingest agent reads: {"documents":[{"id","title","text","source","metadata"}]}.
	var shape struct {
		Documents []map[string]any `json:"documents"`
	}
	_ = json.Unmarshal(raw, &shape)
	for _, k := range []string{"id", "title", "text", "source", "metadata"} {
		if _, ok := shape.Documents[0][k]; !ok {
			t.Errorf("document has no %q: %v", k, shape.Documents[0])
		}
	}
}

func TestWebSelectConfig(t *testing.T) {
	if _, err := selectweb.New(selectweb.Config{TopK: -1, MinSnippet: -2}); err == nil ||
		!strings.Contains(err.Error(), "TopK") || !strings.Contains(err.Error(), "MinSnippet") {
		t.Fatalf("err %v", err)
	}
}

func TestWebSelectNothingKeptIsSure(t *testing.T) {
	a, _ := selectweb.New(selectweb.Config{})
	run := func(results ...selectweb.Result) selectweb.Output {
		in, _ := json.Marshal(map[string]any{"results": results})
		raw, err := a.Handle(context.Background(), agents.Request{StepID: "select", Input: in}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out selectweb.Output
		_ = json.Unmarshal(raw, &out)
		return out
	}
	if out := run(selectweb.Result{URL: "https://a.example", Snippet: "short"}); out.Confidence == nil || *out.Confidence != 1 {
		t.Fatalf("nothing kept, confidence %v", out.Confidence)
	}
	if out := run(res("https://a.example", 1)); out.Confidence != nil {
		t.Fatalf("a kept page must be decided by a human, confidence %v", *out.Confidence)
	}
}
