package websearch

import (
	"context"
	"fmt"
)

// Tavily is the Tavily API client: POST /search and POST /extract, the
// key sent as "Authorization: Bearer <key>". It is safe for concurrent
// use.
type Tavily struct{ c *client }

// Name is ProviderTavily.
func (*Tavily) Name() string { return ProviderTavily }

// tavilySearch is the documented request body of POST /search.
type tavilySearch struct {
	Query             string `json:"query"`
	SearchDepth       string `json:"search_depth,omitempty"`
	Topic             string `json:"topic,omitempty"`
	MaxResults        int    `json:"max_results,omitempty"`
	IncludeRawContent bool   `json:"include_raw_content"`
	IncludeAnswer     bool   `json:"include_answer"`
	IncludeImages     bool   `json:"include_images"`
}

// tavilyResults is the part of the documented /search answer read here.
type tavilyResults struct {
	Query   string `json:"query"`
	Results []struct {
		Title         string  `json:"title"`
		URL           string  `json:"url"`
		Content       string  `json:"content"`
		Score         float64 `json:"score"`
		RawContent    *string `json:"raw_content"`
		PublishedDate string  `json:"published_date"`
	} `json:"results"`
	ResponseTime float64 `json:"response_time"`
}

// Search runs POST /search. Tavily's "content" is the snippet, its
// "raw_content" (when asked for) the page.
func (t *Tavily) Search(ctx context.Context, q Query) ([]Result, error) {
	if q.Text == "" {
		return nil, errNoQuery
	}
	body := tavilySearch{Query: q.Text, SearchDepth: q.Depth, Topic: q.Topic, MaxResults: min(q.MaxResults, 20), IncludeRawContent: q.RawContent}
	var out tavilyResults
	if err := t.c.do(ctx, t.c.jsonRequest("/search", body, t.auth()), &out); err != nil {
		return nil, err
	}
	res := make([]Result, 0, len(out.Results))
	for _, r := range out.Results {
		x := Result{URL: r.URL, Title: r.Title, Snippet: r.Content, Score: r.Score, Published: r.PublishedDate}
		if r.RawContent != nil {
			x.Content = *r.RawContent
		}
		res = append(res, x)
	}
	return res, nil
}

// tavilyExtracted is the documented /extract answer.
type tavilyExtracted struct {
	Results []struct {
		URL        string `json:"url"`
		RawContent string `json:"raw_content"`
	} `json:"results"`
	FailedResults []struct {
		URL   string `json:"url"`
		Error string `json:"error"`
	} `json:"failed_results"`
}

// Extract runs POST /extract for urls (at most 20, Tavily's limit per
// call): a Page per URL, in the order given, with Error set for those
// Tavily could not extract.
func (t *Tavily) Extract(ctx context.Context, urls []string) ([]Page, error) {
	if len(urls) == 0 {
		return nil, nil
	}
	if len(urls) > 20 {
		return nil, fmt.Errorf("websearch: tavily extracts at most 20 URLs a call, got %d", len(urls))
	}
	body := map[string]any{"urls": urls, "extract_depth": DepthBasic}
	var out tavilyExtracted
	if err := t.c.do(ctx, t.c.jsonRequest("/extract", body, t.auth()), &out); err != nil {
		return nil, err
	}
	got := map[string]Page{}
	for _, r := range out.Results {
		got[r.URL] = Page{URL: r.URL, Content: r.RawContent}
	}
	for _, f := range out.FailedResults {
		got[f.URL] = Page{URL: f.URL, Error: f.Error}
	}
	pages := make([]Page, 0, len(urls))
	for _, u := range urls {
		p, ok := got[u]
		if !ok {
			p = Page{URL: u, Error: "not in tavily's answer"}
		}
		pages = append(pages, p)
	}
	return pages, nil
}

func (t *Tavily) auth() map[string]string {
	return map[string]string{"Authorization": "Bearer " + t.c.cfg.APIKey}
}
