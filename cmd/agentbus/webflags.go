package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/agents/selectweb"
	"github.com/agentbus/agentbus/agents/websearch"
)

// webFlags configure the web knowledge graph's agents: web_search (a
// provider client) and select (the seed's rules). With no --web-provider
// neither is served unless --capabilities names select, and the planner
// never plans a web search.
type webFlags struct {
	provider, url, depth, topic string
	maxResults                  int
	rawContent, extract         bool
	timeout                     time.Duration
	blocked                     []string
	topK, minSnippet            int
}

func (f *webFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Var((*providerValue)(&f.provider), "web-provider", "web search provider for the web_search agent: tavily (key in "+websearch.TavilyKeyEnv+
		"), searxng (needs --web-url) or brave (key in "+websearch.BraveKeyEnv+"); unset: no web search")
	fl.StringVar(&f.url, "web-url", "", "the provider's base URL: a SearXNG instance (required for searxng), or a proxy or test server in place of Tavily's or Brave's")
	fl.StringVar(&f.depth, "web-depth", websearch.DepthBasic, "Tavily search_depth: basic or advanced")
	fl.StringVar(&f.topic, "web-topic", "", "search topic: general or news; unset: news when the query speaks of news, else general")
	fl.IntVar(&f.maxResults, "web-max-results", 10, "results asked of the provider per search (at most 20)")
	fl.BoolVar(&f.rawContent, "web-raw-content", true, "ask for each page's full text (Tavily include_raw_content), which is what ingest indexes")
	fl.BoolVar(&f.extract, "web-extract", false, "fetch the full text of results that came without it (Tavily /extract)")
	fl.DurationVar(&f.timeout, "web-timeout", 30*time.Second, "bound on one provider request")
	fl.StringSliceVar(&f.blocked, "web-blocked-domains", selectweb.DefaultBlocked, "domains (and their subdomains) whose pages select drops")
	fl.IntVar(&f.topK, "web-top-k", 5, "web results select keeps at most")
	fl.IntVar(&f.minSnippet, "web-min-snippet", 40, "shortest snippet, in characters, select keeps")
}

// providerValue is --web-provider: a known provider name or empty,
// refused at parse time otherwise (AGENTBUS_WEB_PROVIDER included).
type providerValue string

func (v *providerValue) String() string { return string(*v) }
func (v *providerValue) Type() string   { return "string" }
func (v *providerValue) Set(s string) error {
	s = strings.ToLower(strings.TrimSpace(s))
	if s != "" && !slices.Contains(websearch.Providers(), s) {
		return fmt.Errorf("want one of %s", strings.Join(websearch.Providers(), ", "))
	}
	*v = providerValue(s)
	return nil
}

// configured reports whether a provider is chosen.
func (f *webFlags) configured() bool { return f != nil && f.provider != "" }

// searchAgent is the web_search agent on the chosen provider, its key
// read from the provider's environment variable.
func (f *webFlags) searchAgent() (agents.Agent, error) {
	p, err := websearch.NewProvider(websearch.ProviderConfig{Name: f.provider, BaseURL: f.url,
		APIKey: os.Getenv(websearch.KeyEnv(f.provider)), HTTP: &http.Client{Timeout: f.timeout}})
	if err != nil {
		return nil, fmt.Errorf("--web-provider %s: %w", f.provider, err)
	}
	return websearch.New(websearch.Config{Provider: p, MaxResults: f.maxResults, Depth: f.depth, Topic: f.topic,
		RawContent: f.rawContent, Extract: f.extract})
}

// selectAgent is the select agent with the flags' rules.
func (f *webFlags) selectAgent() (agents.Agent, error) {
	blocked := f.blocked
	if blocked == nil {
		blocked = []string{}
	}
	return selectweb.New(selectweb.Config{MinSnippet: f.minSnippet, Blocked: blocked, TopK: f.topK})
}

// webAgent builds the web graph agent serving c (web_search or select),
// or reports that it is not served here: without a provider, web_search
// is skipped (an explicit --capabilities naming it is a usage error) and
// select is served only when named.
func webAgent(c string, d agentDeps, explicit bool) (agents.Agent, bool, error) {
	w := d.web
	if w == nil {
		w = defaultWebFlags()
	}
	var a agents.Agent
	var err error
	switch {
	case c == websearch.Capability && w.configured():
		a, err = w.searchAgent()
	case c == websearch.Capability && explicit:
		return nil, false, fmt.Errorf("web_search needs a provider: --web-provider %s", strings.Join(websearch.Providers(), "|"))
	case w.configured() || explicit:
		a, err = w.selectAgent()
	default:
		d.log.Debug("not serving "+c+": no --web-provider", slog.String("capability", c))
		return nil, false, nil
	}
	return a, err == nil, err
}

// defaultWebFlags are the flags' defaults: no provider.
func defaultWebFlags() *webFlags {
	var f webFlags
	f.register(&cobra.Command{})
	return &f
}
