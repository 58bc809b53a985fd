package main

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents/selectweb"
	"github.com/agentbus/agentbus/agents/websearch"
)

func TestWebFlagsDecideWhatIsServed(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	served := func(t *testing.T, caps []string, web *webFlags) ([]string, error) {
		t.Helper()
		list, closeAll, err := builtinAgents(context.Background(), caps, agentDeps{log: log, web: web})
		if closeAll != nil {
			defer closeAll()
		}
		var out []string
		for _, a := range list {
			out = append(out, a.Card().Capabilities...)
		}
		return out, err
	}
	tavily := defaultWebFlags()
	tavily.provider = websearch.ProviderTavily
	t.Setenv(websearch.TavilyKeyEnv, "tvly-x")

	t.Run("offline, the defaults: neither web agent", func(t *testing.T) {
		// The default --capabilities list every built-in one (explicit false).
		for _, c := range []string{websearch.Capability, selectweb.Capability} {
			if a, ok, err := webAgent(c, agentDeps{log: log}, false); a != nil || ok || err != nil {
				t.Fatalf("%s: %v %v %v", c, a, ok, err)
			}
		}
	})
	t.Run("offline, select named: served", func(t *testing.T) {
		got, err := served(t, []string{selectweb.Capability}, nil)
		if err != nil || !slices.Equal(got, []string{selectweb.Capability}) {
			t.Fatalf("served %v, %v", got, err)
		}
	})
	t.Run("offline, web_search named: a usage error", func(t *testing.T) {
		if _, err := served(t, []string{websearch.Capability}, nil); err == nil || !strings.Contains(err.Error(), "--web-provider") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("with a provider: both", func(t *testing.T) {
		got, err := served(t, []string{websearch.Capability, selectweb.Capability}, tavily)
		if err != nil || !slices.Equal(got, []string{websearch.Capability, selectweb.Capability}) {
			t.Fatalf("served %v, %v", got, err)
		}
	})
	t.Run("a provider without its key names the variable", func(t *testing.T) {
		t.Setenv(websearch.TavilyKeyEnv, "")
		if _, err := served(t, []string{websearch.Capability}, tavily); err == nil || !strings.Contains(err.Error(), websearch.TavilyKeyEnv) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("an unknown provider is refused at parse time", func(t *testing.T) {
		var v providerValue
		if err := v.Set("bing"); err == nil {
			t.Fatal("bing accepted")
		}
		if err := v.Set("Brave"); err != nil || v != "brave" {
			t.Fatalf("%q, %v", v, err)
		}
	})
}
