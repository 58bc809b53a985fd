package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestServeDiscoversWithTheEmbeddingsEndpoint: with --embed-url, serve's
// agent discovery (GET /v1/agents?query=, and the orchestrator's, which
// shares its registry) embeds queries through the endpoint, names it, and
// uses the cards' vectors the workers stored with it: a query costs the
// endpoint one text, not one per agent.
func TestServeDiscoversWithTheEmbeddingsEndpoint(t *testing.T) {
	srv, texts := embeddingsServer(t, "test-embed")
	info := startServeWith(t, serveFlags{data: t.TempDir(), eventsMaxAge: time.Hour,
		search: backendFlags{backend: "embedded", embedURL: srv.URL + "/v1", embedModel: "test-embed"}}, time.Minute).info
	get := func() (embedder string, names []string) {
		t.Helper()
		r, err := http.Get(info.HTTPURL + "/v1/agents?k=3&query=" + url.QueryEscape("summarize the search results into an answer"))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var out struct {
			Embedder string `json:"embedder"`
			Matches  []struct {
				Name  string  `json:"name"`
				Score float64 `json:"score"`
			} `json:"matches"`
		}
		if r.StatusCode != http.StatusOK || json.NewDecoder(r.Body).Decode(&out) != nil {
			t.Fatalf("GET /v1/agents?query=: status %d", r.StatusCode)
		}
		for _, m := range out.Matches {
			if m.Score <= 0 {
				t.Errorf("match %s scores %g", m.Name, m.Score)
			}
			names = append(names, m.Name)
		}
		return out.Embedder, names
	}
	embedder, names := get()
	if !strings.Contains(embedder, "test-embed at") || len(names) != 3 {
		t.Fatalf("embedder %q, matches %v: want the endpoint named and 3 matches", embedder, names)
	}
	before := texts.Load()
	get()
	if n := texts.Load() - before; n != 1 {
		t.Fatalf("a second query sent %d texts to the endpoint, want 1 (the query; the cards' stored vectors are reused)", n)
	}
}

// TestOrchestratorAndGatewayTakeTheEmbedder: the roles that discover
// agents without running workers take the workers' embedder flags.
func TestOrchestratorAndGatewayTakeTheEmbedder(t *testing.T) {
	for _, role := range []string{"orchestrator", "gateway"} {
		code, out, stderr := cli(t, role, "--help")
		if code != 0 || !strings.Contains(out+stderr, "--embed-url") || !strings.Contains(out+stderr, "--embed-model") {
			t.Errorf("%s --help: exit %d, no --embed-url/--embed-model:\n%s%s", role, code, out, stderr)
		}
	}
}
