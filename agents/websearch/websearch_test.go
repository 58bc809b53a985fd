package websearch_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/websearch"
	"github.com/agentbus/agentbus/agents/websearch/websearchtest"
)

func agent(t *testing.T, f *websearchtest.Fake, name string, cfg websearch.Config) *websearch.Agent {
	t.Helper()
	cfg.Provider = provider(t, name, f, "k1")
	a, err := websearch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func run(t *testing.T, a *websearch.Agent, input, query string) (websearch.Output, error) {
	t.Helper()
	raw, err := a.Handle(ctx(t), kittest.Step("web_search", input, query), &kittest.Recorder{})
	var out websearch.Output
	if err == nil {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
	}
	return out, err
}

func TestWebSearchAgent(t *testing.T) {
	t.Run("workflow query, news topic from the query, raw content", func(t *testing.T) {
		f := websearchtest.New(t, "k1", pages...)
		out, err := run(t, agent(t, f, websearch.ProviderTavily, websearch.Config{RawContent: true}), `{}`, "NATS news this week")
		if err != nil {
			t.Fatal(err)
		}
		if out.Provider != "tavily" || out.Topic != "news" || len(out.Results) != 2 || out.Results[0].Content == "" {
			t.Fatalf("output %+v", out)
		}
		if b := f.Requests()[0].Body; b["topic"] != "news" || b["max_results"] != 10.0 || b["search_depth"] != "basic" {
			t.Fatalf("request %v", b)
		}
	})
	t.Run("input overrides", func(t *testing.T) {
		f := websearchtest.New(t, "k1", pages...)
		_, err := run(t, agent(t, f, websearch.ProviderTavily, websearch.Config{}), `{"query":"q2","max_results":1,"depth":"advanced","topic":"general"}`, "news")
		if err != nil {
			t.Fatal(err)
		}
		if b := f.Requests()[0].Body; b["query"] != "q2" || b["topic"] != "general" || b["max_results"] != 1.0 || b["search_depth"] != "advanced" {
			t.Fatalf("request %v", b)
		}
	})
	t.Run("extract fills the text of results without it", func(t *testing.T) {
		f := websearchtest.New(t, "k1", pages...)
		out, err := run(t, agent(t, f, websearch.ProviderTavily, websearch.Config{Extract: true}), `{}`, "q")
		if err != nil {
			t.Fatal(err)
		}
		if out.Extracted != 1 || out.Results[0].Content != pages[0].Content || out.Results[1].Content != "" {
			t.Fatalf("output %+v", out)
		}
		if rs := f.Requests(); len(rs) != 2 || rs[1].Path != "/extract" {
			t.Fatalf("requests %+v", rs)
		}
	})
	t.Run("urls are extracted, not searched", func(t *testing.T) {
		f := websearchtest.New(t, "k1", pages...)
		out, err := run(t, agent(t, f, websearch.ProviderTavily, websearch.Config{}), `{"urls":["`+pages[0].URL+`"]}`, "")
		if err != nil || len(out.Results) != 1 || out.Results[0].Content != pages[0].Content {
			t.Fatalf("output %+v, %v", out, err)
		}
		_, err = run(t, agent(t, f, websearch.ProviderBrave, websearch.Config{}), `{"urls":["https://a.example"]}`, "")
		if !errors.Is(err, agents.ErrPermanent) {
			t.Fatalf("brave extract: %v", err)
		}
	})
	t.Run("a refused key fails permanently naming the variable", func(t *testing.T) {
		for _, name := range []string{websearch.ProviderTavily, websearch.ProviderBrave} {
			f := websearchtest.New(t, "other", pages...)
			_, err := run(t, agent(t, f, name, websearch.Config{}), `{}`, "q")
			if !errors.Is(err, agents.ErrPermanent) || !strings.Contains(err.Error(), websearch.KeyEnv(name)) {
				t.Fatalf("%s: %v", name, err)
			}
		}
	})
	t.Run("a rate limit that outlasts the retries is retriable", func(t *testing.T) {
		f := websearchtest.New(t, "k1", pages...)
		f.FailAlways(&websearchtest.Failure{Status: http.StatusTooManyRequests})
		_, err := run(t, agent(t, f, websearch.ProviderSearXNG, websearch.Config{}), `{}`, "q")
		if err == nil || errors.Is(err, agents.ErrPermanent) || !errors.Is(err, websearch.ErrRateLimited) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("bad input is permanent", func(t *testing.T) {
		f := websearchtest.New(t, "k1", pages...)
		a := agent(t, f, websearch.ProviderTavily, websearch.Config{})
		for _, in := range []string{`{"depth":"deep"}`, `{"topic":"sports"}`, `[1]`} {
			if _, err := run(t, a, in, "q"); !errors.Is(err, agents.ErrPermanent) {
				t.Errorf("%s: %v", in, err)
			}
		}
		if _, err := run(t, a, `{}`, ""); !errors.Is(err, agents.ErrPermanent) {
			t.Errorf("no query: %v", err)
		}
		if len(f.Requests()) != 0 {
			t.Errorf("bad input reached the provider")
		}
	})
}
