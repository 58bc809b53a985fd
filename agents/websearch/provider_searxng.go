package websearch

import (
	"context"
	"net/url"
	"strconv"
)

// SearXNG is the client of a SearXNG instance's JSON API:
// GET /search?q=…&format=json. The instance must list json in its
// search.formats setting (otherwise it answers 403). It is safe for
// concurrent use.
type SearXNG struct{ c *client }

// Name is ProviderSearXNG.
func (*SearXNG) Name() string { return ProviderSearXNG }

// searxngResults is the part of the documented JSON answer read here.
type searxngResults struct {
	Query           string `json:"query"`
	NumberOfResults int    `json:"number_of_results"`
	Results         []struct {
		URL           string   `json:"url"`
		Title         string   `json:"title"`
		Content       string   `json:"content"`
		Engine        string   `json:"engine"`
		Engines       []string `json:"engines"`
		Score         float64  `json:"score"`
		Category      string   `json:"category"`
		PublishedDate *string  `json:"publishedDate"`
	} `json:"results"`
}

// Search runs GET /search with format=json; a news topic searches the
// news category. SearXNG pages by its own size: the first page is
// read and cut to MaxResults.
func (s *SearXNG) Search(ctx context.Context, q Query) ([]Result, error) {
	if q.Text == "" {
		return nil, errNoQuery
	}
	v := url.Values{"q": {q.Text}, "format": {"json"}, "pageno": {"1"}}
	if q.Topic == TopicNews {
		v.Set("categories", "news")
	} else {
		v.Set("categories", "general")
	}
	var out searxngResults
	if err := s.c.do(ctx, s.c.getRequest("/search", v.Encode(), nil), &out); err != nil {
		return nil, err
	}
	res := make([]Result, 0, len(out.Results))
	for _, r := range out.Results {
		if q.MaxResults > 0 && len(res) == q.MaxResults {
			break
		}
		x := Result{URL: r.URL, Title: r.Title, Snippet: r.Content, Score: r.Score, Engine: r.Engine}
		if r.PublishedDate != nil {
			x.Published = *r.PublishedDate
		}
		res = append(res, x)
	}
	return res, nil
}

// itoa is strconv.Itoa, kept short for query building.
func itoa(n int) string { return strconv.Itoa(n) }
