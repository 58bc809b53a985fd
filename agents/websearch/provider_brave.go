package websearch

import (
	"context"
	"net/url"
	"strings"
)

// Brave is the Brave Search API client: GET /res/v1/web/search with the
// key in the X-Subscription-Token header. It is safe for concurrent use.
type Brave struct{ c *client }

// Name is ProviderBrave.
func (*Brave) Name() string { return ProviderBrave }

// braveResults is the part of the documented WebSearchApiResponse read
// here: the web results.
type braveResults struct {
	Type  string `json:"type"`
	Query struct {
		Original string `json:"original"`
	} `json:"query"`
	Web struct {
		Type    string `json:"type"`
		Results []struct {
			Title         string   `json:"title"`
			URL           string   `json:"url"`
			Description   string   `json:"description"`
			PageAge       string   `json:"page_age"`
			Age           string   `json:"age"`
			ExtraSnippets []string `json:"extra_snippets"`
		} `json:"results"`
	} `json:"web"`
}

// Search runs GET /res/v1/web/search. Brave gives no score: a result's
// is 1/rank. Its extra snippets, when present, are the content. A news
// topic asks for pages of the past week (freshness=pw).
func (b *Brave) Search(ctx context.Context, q Query) ([]Result, error) {
	if q.Text == "" {
		return nil, errNoQuery
	}
	v := url.Values{"q": {q.Text}, "extra_snippets": {"true"}}
	if q.MaxResults > 0 {
		v.Set("count", itoa(min(q.MaxResults, 20)))
	}
	if q.Topic == TopicNews {
		v.Set("freshness", "pw")
	}
	var out braveResults
	hdr := map[string]string{"X-Subscription-Token": b.c.cfg.APIKey}
	if err := b.c.do(ctx, b.c.getRequest("/res/v1/web/search", v.Encode(), hdr), &out); err != nil {
		return nil, err
	}
	res := make([]Result, 0, len(out.Web.Results))
	for i, r := range out.Web.Results {
		x := Result{URL: r.URL, Title: stripTags(r.Title), Snippet: stripTags(r.Description), Score: 1 / float64(i+1), Published: r.PageAge}
		if len(r.ExtraSnippets) > 0 {
			x.Content = stripTags(strings.Join(append([]string{r.Description}, r.ExtraSnippets...), "\n\n"))
		}
		res = append(res, x)
	}
	return res, nil
}

// stripTags removes the <strong> highlighting Brave puts in titles and
// descriptions.
func stripTags(s string) string {
	r := strings.NewReplacer("<strong>", "", "</strong>", "", "<b>", "", "</b>", "")
	return r.Replace(s)
}
