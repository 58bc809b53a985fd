// Package websearch is the built-in web search agent (capability
// "web_search"): it asks a web search provider for pages about the step's
// query and returns them as results for a select step to filter.
//
// Providers are pluggable (Provider); this package holds real HTTP clients
// for the Tavily API (POST /search, POST /extract; key in TAVILY_API_KEY,
// sent as "Authorization: Bearer"), a SearXNG instance's JSON API
// (GET /search?format=json; no key) and the Brave Search API
// (GET /res/v1/web/search; key in BRAVE_API_KEY, sent as
// X-Subscription-Token). Each follows the provider's documented request
// and response JSON.
//
// Data enters as the step's input ({"query", "max_results", "topic",
// "depth", "urls"}) or the workflow's query, and leaves as the step's
// output ({"query", "provider", "results": [{"url", "title", "snippet",
// "content", "score", …}]}). Provider failures are classified for the
// worker's retry policy: a rate limit (429) is retried here, honouring
// Retry-After up to a bound, and then fails the step as retriable; a
// refused key (401/403) fails it permanently with a message naming the
// key's environment variable; a network failure is retriable.
//
// The agent is registered only when a provider is configured: offline,
// the planner never plans a web search.
package websearch
